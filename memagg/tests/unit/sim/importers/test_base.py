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

"""Bad input to every importer: a file of another format, a row cut short,
a negative value, a NaN and a byte that is not UTF-8 each stop memagg-sim
import with exit status 2 and one line on stderr naming the file, the line
and the column, and leave no output behind."""
import pytest

from memagg.tests.unit.sim import import_fixtures as fx
from memagg.tests.unit.sim.import_fixtures import run

T0 = fx.T0


def _bitbrains(root, last):
    """A Bitbrains directory whose 1.csv ends with row ``last``; its path
    and that row's line number."""
    rows = [fx.bitbrains_row(T0 + 300 * i) for i in range(3)] + [last]
    fx.write_bitbrains(root, {'1.csv': rows})
    return root / '1.csv', 5


def _alibaba(root, last):
    rows = [fx.alibaba_usage_row('c_1', 300 * i) for i in range(1, 4)]
    fx.write_alibaba(root, [fx.alibaba_meta_row('c_1')], rows + [last])
    return root / 'container_usage.csv', 4


def _google(root, last):
    rows = [fx.google_usage_row(1, 0, 600 + 300 * i) for i in range(3)]
    fx.write_google(root, rows + [last])
    return root / 'instance_usage-000000000000.json', 4


GOOD = {'bitbrains': (_bitbrains, fx.bitbrains_row(T0 + 900)),
        'alibaba2018': (_alibaba, fx.alibaba_usage_row('c_1', 1200)),
        'google2019': (_google, fx.google_usage_row(1, 0, 1500))}

#: format -> defect -> (last row, what the message names besides the line)
DEFECTS = {
    'bitbrains': {
        'truncated': (fx.bitbrains_row(T0 + 900)[:24],
                      'field CPU usage [%]: missing'),
        'negative': (fx.bitbrains_row(T0 + 900, usage=-5.0),
                     'field CPU usage [MHZ]: must be a number >= 0'),
        'nan': (fx.bitbrains_row(T0 + 900, used_kb='nan'),
                'field Memory usage [KB]: must be a number'),
    },
    'alibaba2018': {
        'truncated': (fx.alibaba_usage_row('c_1', 1200)[:14],
                      'field mem_util_percent: missing'),
        'negative': (fx.alibaba_usage_row('c_1', 1200, mem=-7),
                     'field mem_util_percent: must be a number from 0 to '
                     '100'),
        'nan': (fx.alibaba_usage_row('c_1', 1200, cpu='NaN'),
                'field cpu_util_percent: must be a number'),
    },
    'google2019': {
        'truncated': (fx.google_usage_row(1, 0, 1500)[:60],
                      'column 61: not JSON'),
        'negative': (fx.google_usage_row(1, 0, 1500, cpus=-0.5),
                     'field average_usage.cpus: must be a number >= 0'),
        'nan': (fx.google_usage_row(1, 0, 1500).replace(
                    '"memory": 0.02', '"memory": NaN'),
                'field average_usage.memory: must be a number'),
    },
}


def _fails(capsys, tmp_path, fmt, src, path, line, names):
    out = tmp_path / 'trace.csv'
    status, stdout, err = run(capsys, fmt, str(src), '-o', str(out))
    assert status == 2
    assert stdout == ''
    assert err.count('\n') == 1
    assert err.startswith('memagg-sim import: error: %s:%d: ' % (path, line))
    assert names in err
    assert not out.exists()
    assert not (tmp_path / 'trace.csv.part').exists()


@pytest.mark.parametrize('fmt', sorted(DEFECTS))
@pytest.mark.parametrize('defect', ['truncated', 'negative', 'nan'])
def test_a_bad_value_names_file_line_and_column(tmp_path, capsys, fmt,
                                                defect):
    make, _ = GOOD[fmt]
    last, names = DEFECTS[fmt][defect]
    path, line = make(tmp_path / 'src', last)
    _fails(capsys, tmp_path, fmt, tmp_path / 'src', path, line, names)


@pytest.mark.parametrize('fmt', sorted(DEFECTS))
def test_a_byte_that_is_not_utf8_is_named(tmp_path, capsys, fmt):
    make, good = GOOD[fmt]
    path, line = make(tmp_path / 'src', good)
    data = path.read_bytes().splitlines(keepends=True)
    data[line - 1] = data[line - 1][:10] + b'\xff' + data[line - 1][10:]
    path.write_bytes(b''.join(data))
    _fails(capsys, tmp_path, fmt, tmp_path / 'src', path, line,
           'not UTF-8 (byte 0xff at column 11)')


def _other_format(fmt, root):
    """``root`` holding another format's files where ``fmt`` looks."""
    if fmt == 'bitbrains':
        _alibaba(root, fx.alibaba_usage_row('c_1', 1200))
        return root / 'container_meta.csv', 'field Timestamp [ms]: not a ' \
                                            'GWA-T-12 Bitbrains file'
    if fmt == 'alibaba2018':
        fx.write_alibaba(root, [fx.alibaba_meta_row('c_1')], [])
        (root / 'container_usage.csv').write_text(
            fx.google_usage_row(1, 0, 600) + '\n')
        return root / 'container_usage.csv', 'column 12: more than the 11 ' \
                                             'fields of container_usage.csv'
    fx.write_google(root, [fx.alibaba_usage_row('c_1', 300)])
    return (root / 'instance_usage-000000000000.json',
            'column 1: not JSON')


@pytest.mark.parametrize('fmt', sorted(DEFECTS))
def test_a_file_of_another_format_is_refused(tmp_path, capsys, fmt):
    path, names = _other_format(fmt, tmp_path / 'src')
    _fails(capsys, tmp_path, fmt, tmp_path / 'src', path, 1, names)
