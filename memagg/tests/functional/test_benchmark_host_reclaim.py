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

"""benchmarks/host_reclaim.py as CI runs it: --quick, real guests (one
without a balloon) under no reclaim, the balloon alone, and the balloon
with host reclaim. Figures are not asserted against the targets (they
depend on the machine), only that every regime printed its row of
figures and ratios, that host reclaim put memory in swap and the other
two did not, and that every target has its verdict.

The benchmark runs memagg-compute's period over every guest of the
libvirtd: run it with no other real-guest test at the same time.
"""
import pytest

from memagg.tests.functional import benchmark_script

# The host lane (memagg/tests/lanes.py): a benchmark: swap, DAMON, a loop
# over every domain.
pytestmark = [pytest.mark.functional, pytest.mark.slow, pytest.mark.host]

SCRIPT = 'host_reclaim.py'
REGIMES = ['none', 'balloon', 'reclaim']


def test_quick_run_has_every_regime_figures_and_verdicts():
    run = benchmark_script.run(SCRIPT, '--quick', timeout=1200)

    assert run.returncode == 0, run.stdout + run.stderr[-20000:]
    lines = run.stdout.splitlines()
    rows = {}
    for name, groups in benchmark_script.table_rows(run.stdout, REGIMES,
                                                    6).items():
        freed, ballooned, swapped = map(float, groups[1])
        promotions, pct, slo = map(float, groups[2])
        (read,), (cpu,) = map(lambda g: [float(v) for v in g], groups[3:5])
        ratios = [float(r.rstrip('x')) for r in groups[5]]
        assert len(ratios) == 2, groups
        rows[name] = dict(
            freed=freed, ballooned=ballooned, swapped=swapped,
            promotions=promotions, pct=pct, slo=slo, read=read, cpu=cpu,
            ratios=ratios)
    assert sorted(rows) == sorted(REGIMES), run.stdout
    for name, row in rows.items():
        assert row['read'] > 0 and row['cpu'] > 0, (name, run.stdout)
        assert row['promotions'] >= 0 and row['slo'] == 0.2, run.stdout
    assert rows['none']['ratios'][1] == 1.0
    assert rows['balloon']['ratios'][0] == 1.0
    assert rows['none']['swapped'] == rows['balloon']['swapped'] == 0
    assert rows['none']['ballooned'] == 0, run.stdout
    assert rows['reclaim']['swapped'] > 0, run.stdout
    targets = [line for line in lines if line.startswith('target: ')]
    assert len(targets) == 3, run.stdout
    assert all(line.endswith((' met', ' missed')) for line in targets)
    assert [line for line in lines if line.startswith('verdict: ')], (
        run.stdout)
    assert 'cpu reclaim / balloon: ' in run.stdout


def test_bad_sizes_are_one_line_and_exit_2():
    run = benchmark_script.run(SCRIPT, '--cold-mb', '1000', timeout=60)

    benchmark_script.assert_refused(
        run, 'error: --hot-mb + --cold-mb: must be positive and at most '
        '3/4 of --memory-mb, got 1040')
