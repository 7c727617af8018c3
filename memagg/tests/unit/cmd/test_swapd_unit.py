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

"""The example systemd unit of memagg-swapd in the compute node guide is
one systemd accepts, and runs memagg-swapd unprivileged and hardened."""
import configparser
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

GUIDE = (pathlib.Path(__file__).resolve().parents[4] / 'doc' / 'source' /
         'install' / 'compute-install.rst')
TITLE = 'For example, ``/etc/systemd/system/memagg-swapd.service``'


def _unit_text():
    """The literal block after TITLE, unindented."""
    text = GUIDE.read_text()
    block = text[text.index('::\n\n', text.index(TITLE)) + 4:]
    lines = []
    for line in block.splitlines():
        if line and not line.startswith('    '):
            break
        lines.append(line[4:])
    return '\n'.join(lines).strip() + '\n'


def _service():
    parser = configparser.ConfigParser(interpolation=None, strict=False,
                                       empty_lines_in_values=False)
    parser.optionxform = str    # systemd's keys are case-sensitive
    parser.read_string(_unit_text())
    return parser['Service']


def test_it_runs_unprivileged_with_no_capability():
    service = _service()
    assert service['User'] not in ('', 'root')
    assert service['Group'] == 'libvirt-qemu'
    assert service['CapabilityBoundingSet'] == ''
    assert service['AmbientCapabilities'] == ''
    assert service['NoNewPrivileges'] == 'yes'
    assert service['ProtectSystem'] == 'strict'
    assert service['RuntimeDirectory'] == 'memagg/swapd'
    assert service['StateDirectory'] == 'memagg/swapd'
    assert service['ExecStart'].split()[1:] == [
        '--config-file', '/etc/memagg/memagg.conf']


def test_systemd_accepts_it(tmp_path):
    if shutil.which('systemd-analyze') is None:
        if os.environ.get('CI') == 'true':
            pytest.fail('systemd-analyze is missing: tools/setup.sh '
                        'installs systemd')
        pytest.skip('systemd-analyze is not installed')
    # ExecStart must name a program that exists here; memagg-compute's unit
    # is not, so Before= would be a warning of its own.
    text = _unit_text().replace(
        '/usr/local/bin/memagg-swapd',
        os.path.join(os.path.dirname(sys.executable), 'memagg-swapd'))
    text = text.replace('Before=memagg-compute.service\n', '')
    unit = tmp_path / 'memagg-swapd.service'
    unit.write_text(text)
    proc = subprocess.run(['systemd-analyze', 'verify', str(unit)],
                          capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == '', proc.stderr
