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

"""tools/setup.sh on a machine whose services were never started.

tools/check-cold-start.sh gives setup.sh freshly installed, stopped
RabbitMQ, MariaDB and PostgreSQL in private namespaces (the machine's own
services are not touched), then runs the MariaDB and PostgreSQL database
tests against the servers setup.sh started.
"""
import os
import re
import shutil
import subprocess

import pytest

from memagg.tests.functional import keystone as keystone_fixture

# The host lane (memagg/tests/lanes.py): runs tools/setup.sh on this host.
pytestmark = [pytest.mark.functional, pytest.mark.slow, pytest.mark.host]

SCRIPT = keystone_fixture.REPO_ROOT / 'tools' / 'check-cold-start.sh'


def test_setup_starts_every_service_from_cold():
    if os.geteuid() != 0 or not shutil.which('unshare'):
        message = 'needs root and unshare(1) to give setup.sh cold services'
        if os.environ.get('CI', '').lower() == 'true':
            pytest.fail(message)
        pytest.skip(message)
    result = subprocess.run(
        [str(SCRIPT), 'memagg/tests/functional/db', '-q', '-k',
         'migrat and (mysql or postgresql)'],
        cwd=keystone_fixture.REPO_ROOT, stdin=subprocess.DEVNULL,
        capture_output=True, text=True, timeout=480)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:]
    for started in ('starting PostgreSQL', 'allowing postgres@127.0.0.1',
                    'starting MariaDB', 'allowing root@127.0.0.1',
                    'starting RabbitMQ'):
        assert 'setup: ' + started in output, output[-6000:]
    summary = re.findall(r'^.*\d+ passed.*$', output, re.M)
    assert summary and not re.search(r'\d+ (failed|error)', summary[-1]), (
        output[-6000:])
