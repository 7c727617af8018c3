# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.

"""memagg-manage and memagg-status as processes against the real MariaDB
server, as an operator runs them on a controller."""
import json

import pytest

from memagg.db import migration
from memagg.tests import db_backends
from memagg.tests.unit.cmd import tools

pytestmark = [pytest.mark.functional, pytest.mark.slow]


def test_upgrade_version_and_status_on_mariadb(tmp_path):
    with db_backends.provisioned('mysql', tmp_path) as url:
        config = tools.write_config(tmp_path, url)

        before = tools.run('memagg-manage', config, 'db', 'version')
        failing = tools.run('memagg-status', config, 'upgrade', 'check',
                            '--json')
        upgrade = tools.run('memagg-manage', config, 'db', 'upgrade')
        after = tools.run('memagg-manage', config, 'db', 'version')
        purge = tools.run('memagg-manage', config, 'db', 'purge')
        warning = tools.run('memagg-status', config, 'upgrade', 'check')

    assert (before.returncode, before.stdout) == (1, ''), before.stdout
    assert before.stderr == (
        'memagg-manage: error: no memagg database at %s ([database] '
        'connection): it has no memagg schema; run "memagg-manage db '
        'upgrade" to set it up\n' % url)
    assert failing.returncode == 2, failing.stdout
    schema = json.loads(failing.stdout)['checks'][0]
    assert schema['check'] == 'Database schema'
    assert 'run "memagg-manage db upgrade"' in schema['details']
    assert upgrade.returncode == 0, upgrade.stderr
    assert (after.returncode, after.stdout) == (0, migration.head() + '\n')
    assert (purge.returncode, purge.stdout) == (
        0, 'Deleted 0 WSS and host samples older than 168 hours\n'
        'Deleted 0 audits that ended more than 720 hours ago, with their '
        'actions and migrations\n'), purge.stderr
    # Schema at head, no service registered yet: a warning.
    assert warning.returncode == 1, warning.stdout
    assert 'Result: Success' in warning.stdout
