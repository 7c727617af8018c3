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

"""benchmarks/nova_boots.py as CI runs it: a few boots onto a few hosts.
The times are not asserted (they depend on the machine), only that both
runs booted and that memagg's API was read once per scheduling request."""
import re

import pytest

from memagg.tests.functional import benchmark_script

pytestmark = [pytest.mark.functional]

SCRIPT = 'nova_boots.py'


@pytest.mark.slow
def test_small_run_reads_memagg_once_per_request():
    run = benchmark_script.run(SCRIPT, '--hosts', '3', '--boots', '4')

    assert run.returncode == 0, run.stdout + run.stderr[-20000:]
    times = [float(t) for t in re.findall(r'([\d.]+) ms per boot',
                                          run.stdout)]
    assert len(times) == 2 and min(times) > 0, run.stdout
    assert re.search(r'^  ratio: [\d.]+x', run.stdout, re.MULTILINE)
    assert 'memagg API calls: 4 for 4 scheduling requests' in run.stdout


def test_bad_count_is_one_line_and_exit_2():
    run = benchmark_script.run(SCRIPT, '--boots', '0', timeout=120)

    benchmark_script.assert_refused(
        run, 'argument --boots: must be a positive integer, got 0')
