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

"""The test guest's data tool (memagg/demo/image/blob.c), built for this
machine: the sum it prints when it writes is the one it reads back, and
any change a lost or misplaced swap page would make changes it."""
import os
import re
import subprocess

import pytest

from memagg.demo import guest as vm

MIB = 1024 * 1024
PAGE = 4096


@pytest.fixture(scope='module')
def blob(tmp_path_factory):
    out = str(tmp_path_factory.mktemp('blob') / 'blob')
    subprocess.run(['gcc', '-std=gnu11', '-Wall', '-Wextra', '-Werror',
                    '-O2', '-o', out, os.path.join(vm.IMAGE, 'blob.c')],
                   check=True)
    return out


def _run(blob, *args):
    return subprocess.run([blob] + list(args), capture_output=True,
                          text=True)


def _sum(blob, path):
    done = _run(blob, 'sum', str(path))
    assert done.returncode == 0, done.stderr
    match = re.fullmatch(r'mb=(\d+) sum=([0-9a-f]{16})\n', done.stdout)
    assert match, done.stdout
    return int(match.group(1)), match.group(2)


def test_the_sum_written_is_the_sum_read(blob, tmp_path):
    path = tmp_path / 'data'
    done = _run(blob, 'write', '3', str(path))
    assert done.returncode == 0, done.stderr
    assert path.stat().st_size == 3 * MIB
    assert done.stdout == 'mb=3 sum=%s\n' % _sum(blob, path)[1]


def test_two_fills_differ_and_no_page_is_zero(blob, tmp_path):
    for name in ('a', 'b'):
        assert _run(blob, 'write', '1', str(tmp_path / name)).returncode == 0
    a = (tmp_path / 'a').read_bytes()
    assert a != (tmp_path / 'b').read_bytes()
    pages = [a[i:i + PAGE] for i in range(0, len(a), PAGE)]
    assert bytes(PAGE) not in pages
    assert len(set(pages)) == len(pages)


@pytest.mark.parametrize('change', ['byte', 'zero page', 'pages swapped',
                                    'page lost'])
def test_what_swap_could_lose_changes_the_sum(blob, tmp_path, change):
    path = tmp_path / 'data'
    assert _run(blob, 'write', '2', str(path)).returncode == 0
    data = bytearray(path.read_bytes())
    kept = _sum(blob, path)
    if change == 'byte':
        data[MIB + 12345] ^= 1
    elif change == 'zero page':
        data[5 * PAGE:6 * PAGE] = bytes(PAGE)
    elif change == 'pages swapped':
        data[PAGE:3 * PAGE] = data[2 * PAGE:3 * PAGE] + data[PAGE:2 * PAGE]
    else:
        del data[7 * PAGE:8 * PAGE]
    path.write_bytes(bytes(data))
    assert _sum(blob, path)[1] != kept[1]


def test_a_tail_shorter_than_a_word_is_summed(blob, tmp_path):
    path = tmp_path / 'data'
    path.write_bytes(b'abc')
    kept = _sum(blob, path)
    path.write_bytes(b'abd')
    assert _sum(blob, path) != kept
    assert kept[0] == 0


@pytest.mark.parametrize('args, status, error', [
    (['write', 'x', 'f'], 2, "MIB must be a whole number from 0 to 65536, "
                             "not 'x'"),
    (['write', '-1', 'f'], 2, 'MIB must be a whole number'),
    (['sum', '/nonexistent/f'], 1, 'cannot open /nonexistent/f: No such '
                                   'file or directory'),
    (['write', '1', '/nonexistent/f'], 1, 'cannot create /nonexistent/f'),
    ([], 2, 'usage: blob write MIB FILE | blob sum FILE'),
])
def test_bad_input_is_one_line_and_a_status(blob, args, status, error):
    done = _run(blob, *args)
    assert done.returncode == status
    assert error in done.stderr and done.stderr.count('\n') == 1
    assert done.stdout == ''
