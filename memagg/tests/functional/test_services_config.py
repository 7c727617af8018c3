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

"""Bad configuration stops memagg-scheduler and memagg-compute with one
line on stderr naming the problem, and a non-zero exit."""
import subprocess

import pytest

from memagg.tests.functional import service_procs

pytestmark = [pytest.mark.functional]


def _run(name, args):
    result = subprocess.run(
        ['%s/%s' % (service_procs.BIN_DIR, name)] + args,
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    return result.returncode, result.stderr.strip().splitlines()[-1]


def test_missing_config_file(tmp_path):
    code, line = _run('memagg-scheduler',
                      ['--config-file', str(tmp_path / 'nope.conf')])
    assert code != 0
    assert line.startswith('memagg-scheduler: error: ')
    assert 'nope.conf' in line


def test_unknown_hypervisor_driver(tmp_path):
    config = service_procs.write_config(tmp_path / 'memagg.conf', {
        'DEFAULT': {'transport_url': 'fake://'},
        'database': {'connection': 'sqlite:///%s' % (tmp_path / 'db')},
        'compute': {'hypervisor_driver': 'vmware'},
    })
    code, line = _run('memagg-compute', ['--config-file', str(config)])
    assert code != 0
    assert line == ("memagg-compute: error: Invalid value for '[compute] "
                    "hypervisor_driver': no hypervisor driver 'vmware'; use "
                    "one of libvirt")


def test_unusable_transport_url(tmp_path):
    config = service_procs.write_config(tmp_path / 'memagg.conf', {
        'DEFAULT': {'transport_url': 'carrier-pigeon://coop'},
        'database': {'connection': 'sqlite:///%s' % (tmp_path / 'db')},
    })
    code, line = _run('memagg-scheduler', ['--config-file', str(config)])
    assert code != 0
    assert line.startswith(
        'memagg-scheduler: error: [DEFAULT] transport_url: ')
    assert 'carrier-pigeon' in line


@pytest.mark.parametrize('mode', [None, 0o644])
def test_unusable_grant_secret_key_file(tmp_path, mode):
    key_file = tmp_path / 'secret.key'
    if mode is not None:
        key_file.write_text('00' * 32)
        key_file.chmod(mode)
    config = service_procs.write_config(tmp_path / 'memagg.conf', {
        'DEFAULT': {'transport_url': 'fake://'},
        'database': {'connection': 'sqlite:///%s' % (tmp_path / 'db'),
                     'secret_key_file': str(key_file)},
    })
    code, line = _run('memagg-scheduler', ['--config-file', str(config)])
    assert code != 0
    assert line.startswith('memagg-scheduler: error: [database] '
                           'secret_key_file %s ' % key_file)
    assert ('does not exist' if mode is None else 'chmod 600') in line
