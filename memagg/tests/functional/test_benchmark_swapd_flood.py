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

"""benchmarks/swapd_flood.py as CI runs it: --quick, a real donor and
consumer memagg-swapd under real fio, quiet and under the flood of
test_swapd_bounds.py. The figures are not asserted (they depend on the
machine), only that every figure line is there and parses, that the flood
reached the donor and was refused (EACCES only), and that every read went
to the donor."""
import re

import pytest

from memagg.tests.functional import benchmark_script

pytestmark = [pytest.mark.functional]

SCRIPT = 'swapd_flood.py'
NUMBER = r'(-?\d+(?:\.\d+)?)'
VERDICT = r'(met|missed)'
FIGURES = {
    'round quiet': r'round 1 quiet: IOPS {0}, p50 {0} us, p99 {0} us; '
                   r'donor peak (\d+) threads, RSS ([+-]\d+\.\d) MiB, '
                   r'(\d+) log lines',
    'round flood': r'round 1 flood: IOPS {0}, p50 {0} us, p99 {0} us; '
                   r'donor peak (\d+) threads, RSS ([+-]\d+\.\d) MiB, '
                   r'(\d+) log lines',
    'ratios': r'flood / quiet: p99 {0}x \(target <= 2\.00x: {1}\), '
              r'IOPS {0}x',
    'threads': r'donor threads under the flood: peak (\d+), (\d+) quiet; '
               r'\[swapd\] max_connections (\d+) \(target <= \3 \+ 16 = '
               r'(\d+): {1}\)',
    'rss': r'donor RSS growth under the flood: {0} MiB '
           r'\(target < 16 MiB: {1}\)',
    'log': r'donor log lines in one flood phase: at most (\d+) '
           r'\(target < 100: {1}\)',
    'donor port': r'donor port: \[swapd\] max_connections (\d+), '
                  r'max_connections_per_peer (\d+), idle_timeout (\d+), '
                  r'read_timeout (\d+)',
}


def _figures(stdout):
    """{name: the groups of its line} for each line of FIGURES, each
    expected exactly once."""
    found = {}
    for name, pattern in FIGURES.items():
        regex = re.compile(pattern.format(NUMBER, VERDICT) + '$')
        matches = [m for m in map(regex.match, stdout.splitlines()) if m]
        assert len(matches) == 1, (name, stdout)
        found[name] = matches[0].groups()
    return found


def _pairs(line, prefix):
    """'PREFIX what N, what N...' as {what: int(N)}."""
    return {what: int(count) for what, _, count in (
        part.rpartition(' ') for part in line[len(prefix):].split(', '))}


@pytest.mark.slow
def test_quick_run_prints_every_figure():
    run = benchmark_script.run(SCRIPT, '--quick', timeout=300)

    assert run.returncode == 0, run.stdout + run.stderr
    figures = _figures(run.stdout)
    rows = benchmark_script.table_rows(run.stdout, ['quiet', 'flood'], 4)
    assert sorted(rows) == ['flood', 'quiet'], run.stdout
    for name, columns in rows.items():
        iops, p50, p99 = (float(column[0]) for column in columns[1:])
        assert iops > 0 and 0 < p50 <= p99, (name, run.stdout)
    peak, quiet, cap, _, _ = figures['threads']
    # The flood reached the donor: it held connections of it.
    assert int(peak) > int(quiet), run.stdout
    assert figures['donor port'][0] == cap

    lines = run.stdout.splitlines()
    prefix = 'flood sent, all phases: '
    sent = _pairs(next(line for line in lines if line.startswith(prefix)),
                  prefix)
    # Counts of 0 are left out.
    assert (sent.get('idle connections', 0)
            + sent.get('failed connects', 0)) >= 1000, sent
    assert sent.get('WRITE header connections', 0) > 0, sent
    assert sent.get('frames', 0) > 0, sent
    # Every frame of a random grant was refused, none lost.
    assert {k: v for k, v in sent.items() if k.startswith('status ')} == {
        'status -13': sent['frames']}, sent

    # The figures are the donor's only if every read reached it.
    prefix = 'memagg-sealed export after the run: '
    stats = dict(item.split('=', 1) for item in next(
        line for line in lines if line.startswith(prefix))[
            len(prefix):].split())
    assert int(stats['reads']) > 0, stats
    for key in ('zero_reads', 'local_reads', 'remote_errors',
                'degraded_slabs', 'auth_failures'):
        assert stats[key] == '0', stats
    assert 'WARNING' not in run.stdout


def test_bad_runtime_is_one_line_and_exit_2():
    run = benchmark_script.run(SCRIPT, '--runtime', '0', timeout=60)

    benchmark_script.assert_refused(
        run, 'error: --runtime: must be positive, got 0')
