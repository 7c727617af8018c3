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

"""benchmarks/tiers_guest.py as CI runs it: --quick, a real TCG guest per
placement swapping to a real donor memagg-swapd through a real consumer's.
The figures are not asserted against the targets (they depend on the
machine), only that every placement ran and served its swap-ins from the
tier it puts the slabs on: none from the donor with every slab in L2, all
with every slab on it, the tier policy moved slabs, and every target got a
verdict."""
import pytest

from memagg.tests.functional import benchmark_script

# The host lane: its guests run under this machine's libvirtd, as
# test_tiers_guest's.
pytestmark = [pytest.mark.functional, pytest.mark.slow, pytest.mark.host]

SCRIPT = 'tiers_guest.py'
PLACEMENTS = ['unlimited', 'all-l2', 'static', 'tiers']


@pytest.mark.timeout(1500)
def test_quick_run_has_every_placement_and_a_verdict_per_target():
    run = benchmark_script.run(SCRIPT, '--quick', timeout=1400)

    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-6000:]
    rows = benchmark_script.table_rows(run.stdout, PLACEMENTS, 10)
    assert sorted(rows) == sorted(PLACEMENTS), run.stdout[-6000:]

    def share(name):
        return float(rows[name][3][0].rstrip('%'))

    for name, groups in rows.items():
        assert float(groups[2][0]) > 0, (name, run.stdout[-6000:])
    assert share('all-l2') == 0.0
    assert share('unlimited') == 100.0
    # Nothing of the guest's crossed to a donor with every slab in L2.
    assert rows['all-l2'][6][0] == '0.0M' and rows['all-l2'][8][0] == '0M'
    # The tier policy moved slabs; the static split never does.
    assert rows['tiers'][9][0] != '0' and rows['static'][9][0] == '0'
    for target in ('L1 share', 'swap-in p99', '2x fewer remote bytes'):
        assert any(line.startswith('verdict: target') and target in line
                   for line in run.stdout.splitlines()), run.stdout[-3000:]
