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

"""benchmarks/osc_host_list.py as CI runs it: a few rounds over a few
hosts. The times are not asserted (they depend on the machine and its
load), only that every round ran both commands, that host list listed
every host (the script checks), and that the medians, the difference, the
ratio and the verdict on the 0.3 s target were printed."""
import re

import pytest

from memagg.tests.functional import benchmark_script

SCRIPT = 'osc_host_list.py'
ROUNDS, HOSTS = 3, 5
MS = r'(\d+) ms \(CPU +(-?\d+) ms\)'

pytestmark = [pytest.mark.functional]


# The host lane (memagg/tests/lanes.py): a benchmark's timing.
@pytest.mark.slow
@pytest.mark.host
def test_quick_run_prints_both_medians_the_difference_and_the_verdict():
    run = benchmark_script.run(SCRIPT, '--rounds', str(ROUNDS), '--hosts',
                               str(HOSTS), timeout=300)

    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    rounds = [line for line in lines
              if re.match(r'\s+\d+\s+\d+ \( *\d+\)\s+\d+ \( *\d+\)', line)]
    assert len(rounds) == ROUNDS, run.stdout
    assert re.search(r'^peer: +openstack --version +median +%s$' % MS,
                     run.stdout, re.M), run.stdout
    assert re.search(r'^memagg: +openstack memagg host list +median +%s$'
                     % MS, run.stdout, re.M), run.stdout
    assert re.search(r'^added by memagg host list: -?\d+ ms \(CPU -?\d+ '
                     r'ms\); ratio host list/--version \d+\.\d\d$',
                     run.stdout, re.M), run.stdout
    assert re.search(r'^target: at most 300 ms added: (met|NOT met)$',
                     run.stdout, re.M), run.stdout


@pytest.mark.parametrize('args, message', [
    (['--rounds', '0'], 'argument --rounds: must be at least 1, got 0'),
    (['--hosts', '-2'], 'argument --hosts: must be at least 1, got -2'),
])
def test_bad_options_are_one_line_and_exit_2(args, message):
    run = benchmark_script.run(SCRIPT, *args, timeout=60)

    benchmark_script.assert_refused(run, message)
