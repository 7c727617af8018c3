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

"""benchmarks/migration.py as CI runs it: --quick, real guests moved
between the two hypervisor hosts of this machine (memagg at remote shares
0 and 50 %, the guest with all its memory local, the guest with a local
swap file block-migrated). Times are not asserted (they depend on the
machine), only that every case and peer printed its figures and ratios,
and that the guest with half its memory on donors moved fewer bytes than
the same guest with all of it local.

The benchmark balloons its guests itself: run it with no other real-guest
test at the same time (a memagg-compute balloons every guest of the
libvirtd).
"""
import pytest

from memagg.tests.functional import benchmark_script

# The host lane (memagg/tests/lanes.py): a benchmark: a loop over every
# domain, timed migrations.
pytestmark = [pytest.mark.functional, pytest.mark.slow, pytest.mark.host]

SCRIPT = 'migration.py'
CASES = ['peer-a', 'memagg-0', 'memagg-50', 'peer-b']


def test_quick_run_has_every_case_figures_and_ratios():
    run = benchmark_script.run(SCRIPT, '--quick', timeout=900)

    assert run.returncode == 0, run.stdout + run.stderr[-20000:]
    lines = run.stdout.splitlines()
    rows = {}
    for name, groups in benchmark_script.table_rows(run.stdout, CASES,
                                                    5).items():
        share, remote, _ = groups[1]
        moved, seconds = groups[2]
        ratios = [float(r.rstrip('x')) for r in groups[3] + groups[4]]
        assert len(ratios) == 4, groups
        rows[name] = (float(share), float(remote), float(moved),
                      float(seconds), ratios)
    assert sorted(rows) == sorted(CASES), run.stdout
    for name, (share, remote, moved, seconds, ratios) in rows.items():
        assert moved > 0 and seconds > 0, (name, run.stdout)
        assert all(r > 0 for r in ratios), (name, run.stdout)
    assert rows['peer-a'][4][:2] == [1.0, 1.0]
    assert rows['peer-b'][4][2:] == [1.0, 1.0]
    # Half the guest's memory on donors: the remote pages stayed there.
    assert rows['memagg-50'][0] > 25, run.stdout
    assert rows['memagg-50'][2] < rows['peer-a'][2], run.stdout
    assert rows['peer-b'][0] > 25, run.stdout
    targets = [line for line in lines if line.startswith('target: ')]
    assert len(targets) == 5, run.stdout
    assert all(line.endswith((' met', ' missed')) for line in targets)
    assert 'time memagg-50 / memagg-0: ' in run.stdout


def test_bad_data_size_is_one_line_and_exit_2():
    run = benchmark_script.run(SCRIPT, '--data-mb', '1000', timeout=60)

    benchmark_script.assert_refused(
        run, 'error: --data-mb: must be positive and at most 3/4 of '
        '--guest-mb, got 1000')
