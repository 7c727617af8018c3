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

"""memagg's tempest plug-in (``tempest_plugin``), run by ``tempest run``
against the shared ``deployment``, as a cloud's CI would run it.

tempest has its own virtualenv, ``.venv-tempest`` (tools/setup.sh; override
with MEMAGG_TEMPEST_VENV), with memagg installed there only for the
plug-in's entry point. The test writes a tempest workspace whose
tempest.conf points at the deployment's Keystone, with dynamic credentials
made from its admin, runs every test of the plug-in and asserts that each
one passed: a skip is a failure here, because the seeded deployment has
something of every resource.

Without ``.venv-tempest`` the test skips, except under CI (CI=true), where
a missing tempest is a broken setup and fails it.
"""
import configparser
import os
import pathlib
import re
import subprocess

import pytest

from memagg.demo import keystone as demo_keystone
from memagg.tests.functional import keystone as keystone_fixture
from memagg.tests import source_counts

pytestmark = [pytest.mark.functional, pytest.mark.slow]

REPO_ROOT = pathlib.Path(__file__).resolve().parents[3]
VENV = pathlib.Path(os.environ.get('MEMAGG_TEMPEST_VENV',
                                   REPO_ROOT / '.venv-tempest'))
PLUGIN_TESTS = REPO_ROOT / 'tempest_plugin' / 'tests'
RUN_TIMEOUT = 300
# Services tempest would otherwise expect in the catalog.
OTHER_SERVICES = ('nova', 'cinder', 'glance', 'neutron', 'swift', 'heat',
                  'horizon', 'placement')


def _tempest():
    tempest = VENV / 'bin' / 'tempest'
    if tempest.exists():
        return tempest
    message = ('no tempest in %s: run ./tools/setup.sh to install it'
               % VENV)
    if keystone_fixture.in_ci():
        pytest.fail(message + ' (CI must run the tempest plug-in)')
    pytest.skip(message)


def _write_conf(deployment, workspace):
    """The workspace's etc/tempest.conf: Keystone v3 only, dynamic
    credentials from the admin, memagg the only service."""
    admin = deployment.keystone.admin
    conf = configparser.ConfigParser()
    conf.read_dict({
        'DEFAULT': {'log_dir': str(workspace / 'logs'),
                    'log_file': 'tempest.log'},
        'oslo_concurrency': {'lock_path': str(workspace / 'lock')},
        'auth': {'use_dynamic_credentials': 'True',
                 'create_isolated_networks': 'False',
                 'admin_username': admin.username,
                 'admin_password': admin.password,
                 'admin_project_name': admin.project_name,
                 'admin_domain_name': 'Default'},
        'identity': {'uri_v3': deployment.keystone.auth_url,
                     'auth_version': 'v3',
                     'region': demo_keystone.REGION},
        'identity-feature-enabled': {'api_v2': 'False'},
        'service_available': dict(
            {name: 'False' for name in OTHER_SERVICES}, memagg='True'),
        'memagg': {'catalog_type': 'memory-aggregation',
                   'endpoint_type': 'public',
                   'build_timeout': '60', 'build_interval': '0.2'},
    })
    (workspace / 'logs').mkdir()
    path = workspace / 'etc' / 'tempest.conf'
    path.parent.mkdir()
    with open(path, 'w') as f:
        conf.write(f)
    return path


def _failures(output):
    """What tempest printed about its failing tests (their tracebacks and
    captured output), else the end of its output."""
    start = output.find('Failed ')
    return output[start:] if start >= 0 else output[-20000:]


def test_tempest_plugin_passes(deployment, tmp_path):
    tempest = _tempest()
    conf = _write_conf(deployment, tmp_path)

    # Serial: the test Keystone keeps its data in SQLite, and two workers
    # making and deleting their credentials at once get 'database is
    # locked' (500) from it.
    result = subprocess.run(
        [str(tempest), 'run', '--config-file', str(conf),
         '--regex', r'^tempest_plugin\.', '--serial'],
        cwd=tmp_path, capture_output=True, text=True, timeout=RUN_TIMEOUT,
        stdin=subprocess.DEVNULL)

    output = result.stdout + result.stderr
    passed = re.search(r'^ - Passed: (\d+)$', output, re.MULTILINE)
    assert result.returncode == 0 and passed, (
        'tempest run exited %d:\n%s' % (result.returncode,
                                        _failures(output)))
    expected = source_counts.count_test_methods(PLUGIN_TESTS)
    assert int(passed.group(1)) == expected, (
        '%s of the plug-in\'s %d tests passed:\n%s'
        % (passed.group(1), expected, output[-20000:]))
