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

"""memagg-sim run as an operator runs it: the installed console script on
a small synthetic cloud, then on the trace it wrote, with a bad trace
row last."""
import json
import subprocess

import pytest

from memagg.tests.functional import service_procs

pytestmark = [pytest.mark.functional]


def _sim(*args):
    return subprocess.run(
        ['%s/memagg-sim' % service_procs.BIN_DIR, *args],
        capture_output=True, text=True, timeout=300,
        stdin=subprocess.DEVNULL)


def test_synthetic_run_then_its_trace_then_a_bad_row(tmp_path):
    out = tmp_path / 'out'
    trace = tmp_path / 'trace.csv'

    run = _sim('--hosts', '10', '--days', '0.5', '--seed', '4',
               '--write-trace', str(trace), '--output-dir', str(out),
               '--progress')

    assert run.returncode == 0, run.stderr
    assert '] 100% 288/288 steps' in run.stderr
    assert 'wss packing keeps' in run.stdout
    summary = json.loads((out / 'summary.json').read_text())
    assert set(summary['bases']) == {'booked', 'wss'}
    assert summary['trace']['synthetic']['hosts'] == 10
    for name in ('active_hosts.png', 'migrations.png', 'overload.png',
                 'remote.png'):
        assert (out / name).read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'

    replay = _sim('--trace', str(trace), '--output-dir', str(tmp_path / 'r'),
                  '--no-plots', '--quiet')

    assert (replay.returncode, replay.stdout, replay.stderr) == (0, '', '')
    again = json.loads((tmp_path / 'r' / 'summary.json').read_text())
    assert (again['comparison']['hosts_saved_ratio']
            == summary['comparison']['hosts_saved_ratio'])

    lines = trace.read_text().splitlines()
    fields = lines[5].split(',')
    fields[5] = '-3'
    lines[5] = ','.join(fields)
    trace.write_text('\n'.join(lines) + '\n')
    bad = _sim('--trace', str(trace), '--output-dir', str(tmp_path / 'b'))

    assert bad.returncode == 2
    assert bad.stderr == (
        "memagg-sim: error: %s:6: field wss_mb: must be a number between 0 "
        "and booked_mb (%g), got '-3'\n" % (trace, float(fields[2])))
