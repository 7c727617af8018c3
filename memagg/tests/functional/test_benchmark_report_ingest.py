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

"""benchmarks/report_ingest.py --fleet as CI runs it: a few nodes for a few
seconds, with one and two real memagg-scheduler processes on RabbitMQ and
MariaDB, reports sent as notifications and as RPC casts. The figures are
not asserted (they depend on the machine), only that the four runs took
place, measured the workers, stored every sample once and printed the
ratio for each worker count (said to be unknown when /proc's 10 ms CPU
ticks counted none for notify after the first period, which a run of a
few seconds may: a CI rehearsal lost the line that way)."""
import re

import pytest

from memagg.tests.functional import benchmark_script

pytestmark = [pytest.mark.functional]

SCRIPT = 'report_ingest.py'
NODES, PERIOD, DURATION, INSTANCES = 20, 1, 3, 5


@pytest.mark.slow
def test_quick_fleet_run_with_one_and_two_workers():
    run = benchmark_script.run(
        SCRIPT, '--fleet', '--nodes', str(NODES), '--period', str(PERIOD),
        '--duration', str(DURATION), '--instances', str(INSTANCES),
        '--sample-every', '1', timeout=300)

    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    header = lines.index(next(line for line in lines
                              if line.startswith('path    workers')))
    rows = {}
    for line in lines[header + 1:]:
        match = re.match(r'(notify|rpc)\s+(\d+)\s+(\d+)\s+(\d+)/(\d+)\s',
                         line)
        if match:
            rows[match.group(1), int(match.group(2))] = [
                int(g) for g in match.groups()[2:]]
    assert sorted(rows) == [('notify', 1), ('notify', 2), ('rpc', 1),
                            ('rpc', 2)], run.stdout
    for workers, (reports, stored, sent) in rows.items():
        # Every node sent DURATION / PERIOD reports, late or not.
        assert sent == NODES * INSTANCES * DURATION // PERIOD, run.stdout
        assert stored == sent, run.stdout
    assert 'every sample sent was stored once' in lines, run.stdout
    # Both workers of the two-worker runs took reports (CPU per worker).
    per_worker = [line for line in lines
                  if line.strip().startswith('CPU s per worker: ')]
    assert len(per_worker) == 2, run.stdout
    assert all(len(line.split(':')[1].split(',')) == 2
               for line in per_worker), run.stdout
    assert sum('rpc/notify' in line for line in lines) == 2, run.stdout


@pytest.mark.parametrize('args, message', [
    (['--workers', '1,0'], "a comma-separated list of worker counts such "
     "as 1,2, got '1,0'"),
    (['--period', '0.5'], '--period: must be at least 1 s (the scheduler '
     'keeps one sample per instance and second), got 0.5'),
])
def test_bad_options_are_one_line_and_exit_2(args, message):
    run = benchmark_script.run(SCRIPT, '--fleet', *args, timeout=60)

    benchmark_script.assert_refused(run, message)
