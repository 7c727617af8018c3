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

"""The native sampler's huge page splitting (split_huge_pages) against a
real process whose memory uses transparent huge pages: a hot set scattered
in 64 KiB chunks touches nearly every 2 MiB huge page, so with one accessed
bit per huge page nearly every sample reads accessed; split, the sampled
fraction is the hot set's."""
import os
import subprocess
import sys

import pytest

from memagg import _native
from memagg.tests.unit.native import test_sampler

MIB = 1 << 20
PFN_BACKENDS = ('page_idle', 'damon_paddr')

# The host lane (memagg/tests/lanes.py): DAMON on the host's physical pages.
pytestmark = [
    pytest.mark.host,
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0,
                       reason='PFNs in pagemap, kpageflags and DAMON need '
                              'root')]


def anon_huge_kb(pid):
    with open('/proc/%d/smaps_rollup' % pid) as f:
        for line in f:
            if line.startswith('AnonHugePages:'):
                return int(line.split()[1])
    return 0


@pytest.fixture
def thp_child(tmp_path):
    """256 MiB in transparent huge pages, 64 MiB of it hot in scattered
    64 KiB chunks: true fraction 0.25."""
    passes = tmp_path / 'passes'
    passes.write_bytes(bytes(8))
    proc = subprocess.Popen(
        [sys.executable, test_sampler.HOTSET, '256', '64', str(passes),
         '--scatter', '7', '--thp'], stdout=subprocess.PIPE, text=True)
    addr = int(proc.stdout.readline())
    child = test_sampler.HotChild(proc, addr, 256 * MIB, passes)
    child.wait_passes(1)
    yield child
    proc.kill()
    proc.wait()


def _backend():
    for name in PFN_BACKENDS:
        if _native.backends()[name][0]:
            return name
    pytest.skip('no PFN backend on this kernel: %s' % _native.backends())


def _window(sampler, child):
    sampler.begin()
    child.wait_passes(2)
    return sampler.collect()


def test_split_gives_each_sampled_page_its_own_accessed_bit(thp_child):
    backend = _backend()
    huge_kb = anon_huge_kb(thp_child.pid)
    if huge_kb < 128 * 1024:
        pytest.skip('the child got %d KiB of huge pages (THP off?)'
                    % huge_kb)
    args = (thp_child.pid, thp_child.addr, thp_child.length)
    whole = _native.Sampler(*args, n=2000, backend=backend, seed=7,
                            sample_interval=0.5)
    try:
        unsplit = _window(whole, thp_child)
    finally:
        whole.close()
    # One bit per 2 MiB: nearly every huge page holds hot chunks.
    assert unsplit['fraction'] > 0.6, unsplit
    assert unsplit['split'] == unsplit['huge'] == unsplit['zero'] == 0
    assert anon_huge_kb(thp_child.pid) == huge_kb

    sampler = _native.Sampler(*args, n=2000, backend=backend, seed=7,
                              sample_interval=0.5, split_huge_pages=True)
    try:
        first = _window(sampler, thp_child)
        second = _window(sampler, thp_child)
    finally:
        sampler.close()
    print('unsplit', unsplit, 'split', first, second)
    # Only the huge pages under samples, each once: 2000 samples over 128
    # huge pages split them all at the first draw, none at the next.
    assert 0 < first['split'] <= 128, first
    assert first['huge'] == 0 and first['zero'] == 0, first
    assert first['split_s'] > 0
    assert second['split'] == 0 and second['huge'] == 0, second
    assert anon_huge_kb(thp_child.pid) <= huge_kb - first['split'] * 2048
    for result in (first, second):
        assert result['moved'] == 0
        assert result['fraction'] == pytest.approx(0.25, abs=0.05), result


def test_split_is_ignored_by_clear_refs(thp_child):
    sampler = _native.Sampler(thp_child.pid, thp_child.addr,
                              thp_child.length, backend='clear_refs',
                              split_huge_pages=True)
    try:
        result = _window(sampler, thp_child)
    finally:
        sampler.close()
    assert result['split'] == 0 and result['huge'] == 0


def test_split_of_a_dead_process_names_it():
    proc = subprocess.Popen([sys.executable, '-c', 'pass'])
    proc.wait()
    with pytest.raises(OSError) as exc:
        _native.Sampler(proc.pid, 0, MIB, backend='clear_refs',
                        split_huge_pages=True)
    assert str(proc.pid) in str(exc.value)
