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

"""The budget's closing lines: counts, and each failure with its reason."""
from memagg.tests import budget


def _record(nodeid, when, outcome, start, stop, message=None):
    rec = dict(nodeid=nodeid, lane='host', when=when, outcome=outcome,
               start=start, stop=stop)
    if message is not None:
        rec['message'] = message
    return rec


def test_a_failure_is_followed_by_its_error_lines_and_the_count_ends():
    failure = '\n'.join(
        ['    def test_x():', '>       assert took <= 30',
         'E   assert 41.5 <= 30']
        + ['E   line %d' % i for i in range(20)]
        + ['', 'memagg/tests/functional/test_x.py:12: AssertionError'])
    records = [
        _record('memagg/tests/unit/test_a.py::test_ok', 'call', 'passed',
                0, 1),
        _record('memagg/tests/functional/test_x.py::test_x', 'call',
                'failed', 1, 3, failure),
        _record('memagg/tests/functional/test_x.py::test_x', 'teardown',
                'passed', 3, 4),
    ]
    lines = budget.report(records, {'host': (0.0, 4.0, 1)})
    at = lines.index('FAILED memagg/tests/functional/test_x.py::test_x')
    reason = lines[at + 1:-1]
    assert reason == ['  E   assert 41.5 <= 30', '  E   line 0',
                      '  E   line 1', '  E   line 2', '  ...'] + [
        '  E   line %d' % i for i in range(13, 20)]
    assert lines[-1] == 'total: 1 passed, 1 failed, 0 skipped'


def test_a_failure_without_text_is_named_alone():
    records = [_record('t.py::test_y', 'setup', 'failed', 0, 1)]
    lines = budget.report(records, {})
    assert lines[-2:] == ['FAILED t.py::test_y',
                          'total: 0 passed, 1 failed, 0 skipped']


def test_the_cpu_line_gives_the_busy_share_between_the_counters(tmp_path):
    # user nice system idle iowait irq softirq steal guest guest_nice
    (tmp_path / 'cpu.before').write_text('cpu  100 0 0 100 0 0 0 0 0 0\n')
    (tmp_path / 'cpu.after').write_text('cpu  190 30 30 180 20 0 0 0 9 0\n')
    busy = budget.cpu_busy(tmp_path)
    assert busy[0] == 0.6
    lines = budget.report([], {}, busy=busy)
    assert ('  cpu             60 %% busy of %d cores while the lanes ran'
            % busy[1]) in lines


def test_no_cpu_line_without_both_counters(tmp_path):
    (tmp_path / 'cpu.before').write_text('cpu  100 0 0 100 0 0 0 0 0 0\n')
    assert budget.cpu_busy(tmp_path) is None
