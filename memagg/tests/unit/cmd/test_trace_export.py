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

"""memagg-manage trace export's grid: how samples become steps, how gaps
are filled or cut, and its arguments refused with the field and the fix.
The export from a database on three backends is in
memagg/tests/functional/db/test_trace_export.py."""
import collections
import datetime

import pytest

from memagg.cmd import manage
from memagg.cmd import trace_export
from memagg.common import cli
from memagg.tests.unit.cmd import tools

T0 = datetime.datetime(2026, 12, 1)
Row = collections.namedtuple('Row', 'sampled_at wss_mb cpu_util warming host')


def _row(seconds, wss, cpu=0.5, warming=False, host='h1'):
    return Row(T0 + datetime.timedelta(seconds=seconds), wss, cpu, warming,
               host)


def test_a_step_takes_the_largest_wss_and_the_mean_cpu():
    steps = trace_export.steps_of([
        _row(0, 100, 0.2), _row(4, 300, 0.6), _row(9.9, 200, None),
        _row(10, 50, 1.0, host='h2')], T0, 10)
    assert steps == {0: (pytest.approx(0.4), 300, 'h1'),
                     1: (1.0, 50, 'h2')}


def test_warming_samples_give_cpu_but_no_wss():
    steps = trace_export.steps_of([
        _row(0, 900, 0.3, warming=True), _row(10, 900, warming=True),
        _row(12, 100, 0.1)], T0, 10)
    # Step 0 has only a warming estimate: missing. Step 1's warming 900 is
    # left out of its WSS, not of its CPU.
    assert steps == {1: (pytest.approx(0.3), 100, 'h1')}


def test_short_gaps_repeat_the_step_before_and_long_ones_cut():
    steps = {0: (0.1, 10, 'h1'), 1: (0.2, 20, 'h1'), 3: (0.3, 30, 'h1'),
             7: (0.4, 40, 'h2'), 8: (0.5, 50, 'h2')}
    runs = list(trace_export.pieces(steps, max_gap=2))
    assert runs == [
        [(0, 0.1, 10, 'h1'), (1, 0.2, 20, 'h1'), (2, 0.2, 20, 'h1'),
         (3, 0.3, 30, 'h1')],
        [(7, 0.4, 40, 'h2'), (8, 0.5, 50, 'h2')]]
    assert len(list(trace_export.pieces(steps, max_gap=3))) == 1
    assert list(trace_export.pieces({}, max_gap=3)) == []


@pytest.mark.parametrize('since, until, step, gap, message', [
    ('2026-12-08', '2026-12-01', 10, 5,
     'argument --until: 2026-12-01T00:00:00 is not after --since '
     '2026-12-08T00:00:00; give an --until later than --since'),
    ('2026-12-01', '2026-12-01T00:00:00Z', 10, 5,
     'argument --until: 2026-12-01T00:00:00 is not after --since'),
    ('2026-12-01', '2026-12-02', 0, 5,
     'argument --step: 0 is less than 1; give the seconds of a step'),
    ('2026-12-01', '2026-12-02', 10, -1,
     'argument --max-gap: -1 is negative; give 0 or more steps'),
])
def test_a_bad_window_names_the_argument(since, until, step, gap, message):
    with pytest.raises(cli.UsageError) as info:
        trace_export.check_window(
            trace_export.parse_time('--since', since),
            trace_export.parse_time('--until', until), step, gap)
    assert str(info.value).startswith(message)


def test_times_with_a_zone_are_taken_to_utc():
    assert trace_export.parse_time('--since', '2026-12-01T02:00:00+02:00') \
        == T0


@pytest.mark.parametrize('args, message', [
    (('--since', 'last week', '--until', '2026-12-08'),
     "argument --since: 'last week' is not a time ("),
    (('--since', '2026-12-01', '--until', '2026-13-01'),
     "argument --until: '2026-13-01' is not a time ("),
    (('--since', '2026-12-08', '--until', '2026-12-01'),
     'argument --until: 2026-12-01T00:00:00 is not after --since'),
    (('--since', '2026-12-01', '--until', '2026-12-08', '--step', 'x'),
     "argument --step: invalid int value: 'x'"),
    (('--until', '2026-12-08'),
     'the following arguments are required: --since'),
])
def test_the_command_refuses_bad_arguments_in_one_line(tmp_path, args,
                                                       message):
    config = tools.write_config(tmp_path, 'sqlite:///%s'
                                % (tmp_path / 'none.sqlite'))

    status, out, err = tools.run_main(
        manage.main, 'memagg-manage', '--config-file', str(config), 'trace',
        'export', '-o', str(tmp_path / 'out'), *args)

    assert (status, out) == (2, '')
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith('memagg-manage: error: ' + message)
    assert 'give' in lines[0] or 'required' in lines[0] or 'invalid' in (
        lines[0])
    assert not (tmp_path / 'none.sqlite').exists()
