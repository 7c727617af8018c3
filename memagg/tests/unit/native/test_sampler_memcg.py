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

"""The damon_memcg backend on real DAMON: hot-set processes, each in a
memory cgroup of its own (as libvirt gives each domain), counted by one
kept-running kdamond.

Each process maps 64 MiB and keeps its first HOT MiB hot (a multiple of
2 MiB, so that a huge page holds hot or cold pages only). The sampler
draws one page per equal slice of the mapping, 16 pages each at n = 1024:
exactly HOT x 16 of the 1,024 sampled pages are hot, the truth every
window's count must equal. It did but for a rare window 1 to 5 pages over,
and on 2026-11-28 windows 15 to 37 under in about half the runs of this
file. The pages over were pages just faulted that the kernel had not put
on an LRU list yet, where DAMON does not see them (hotset.py says more):
with the child's pages settled first, 270 windows of 9 runs of this file,
4 of them beside two processes faulting memory without pause, were all
exact, and none was under. CI's run of 2026-12-02 had one window 10 under
(758 of 768): the host's compaction had moved hot pages, which the kdamond
kept watching at their old PFNs, idle; a move of a few pages escapes the
sampler's quick recheck (one sample in eight). With compaction forced
every 0.3 s, 6 runs of 12 periods had windows 2 to 10 under; with the
children's pages pinned (hotset.py --pin), 6 runs were all exact. CI's
runs of 2026-12-03 had windows 3 to 13 under with the pages pinned: the
child's loop kept some of its hot pages' translations in the CPU's TLB,
where the kernel does not flush them when it clears accessed bits, so
their uses set no accessed bit; the child now flushes its TLB each pass
(hotset.py says more).
"""
import errno
import os
import struct
import subprocess
import sys

import pytest

from memagg import _native
from memagg.compute import sampling
from memagg.tests import damon
from memagg.tests.polling import wait_for
from memagg.tests.unit.native.test_sampler import _kdamond_windows

PAGE = 4096
MIB = 1 << 20
TOTAL_MIB = 64
N = 1024
HOTSET = os.path.join(os.path.dirname(__file__), 'hotset.py')
CG_V1 = '/sys/fs/cgroup/memory'


def _cgroup_root():
    if os.path.exists(CG_V1 + '/cgroup.procs'):
        return CG_V1
    return '/sys/fs/cgroup'


# The host lane (memagg/tests/lanes.py): DAMON: counts the host's kdamonds.
pytestmark = [
    pytest.mark.host,
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0,
                       reason='PFNs in pagemap, DAMON and cgroups need root'),
    pytest.mark.skipif(not _native.backends()['damon_memcg'][0],
                       reason=_native.backends()['damon_memcg'][1]),
]


def _write(path, value):
    with open(path, 'w') as f:
        f.write(str(value))


def _cgroup_empty(path):
    with open(os.path.join(path, 'cgroup.procs')) as f:
        return not f.read().strip()


class Child:
    """A hot-set process in a memory cgroup of its own."""

    def __init__(self, tmp_path, name, hot_mib):
        self.hot_mib = hot_mib
        self.cgroups = []
        self.cgroup = self.new_cgroup(name)
        self.passes_path = tmp_path / ('passes-' + name)
        self.passes_path.write_bytes(bytes(8))
        procs = os.path.join(self.cgroup, 'cgroup.procs')
        # In its cgroup before it faults a page: its memory is charged there.
        self.proc = subprocess.Popen(
            [sys.executable, HOTSET, str(TOTAL_MIB), str(hot_mib),
             str(self.passes_path), '--pin'],
            stdout=subprocess.PIPE, text=True,
            preexec_fn=lambda: _write(procs, os.getpid()))
        self.pid = self.proc.pid
        self.addr = int(self.proc.stdout.readline())
        self.wait_passes(2)

    def new_cgroup(self, name):
        path = os.path.join(_cgroup_root(),
                            'memagg-test-%d-%s' % (os.getpid(), name))
        os.mkdir(path)
        self.cgroups.append(path)
        return path

    def truth(self, n=N):
        return self.hot_mib * n // TOTAL_MIB

    def passes(self):
        return struct.unpack('Q', self.passes_path.read_bytes())[0]

    def wait_passes(self, count):
        target = self.passes() + count
        wait_for(lambda: self.passes() >= target, timeout=60,
                 interval=0.01, message='%d passes over the hot set' % count)

    def sampler(self, backend='damon_memcg', n=N, window=0.5):
        return _native.Sampler(self.pid, self.addr, TOTAL_MIB * MIB, n=n,
                               backend=backend, seed=self.hot_mib,
                               sample_interval=window)

    def close(self):
        self.proc.kill()
        self.proc.wait()
        for path in reversed(self.cgroups):
            if os.path.isdir(path):
                wait_for(lambda: _cgroup_empty(path), timeout=30,
                         message='the cgroup to empty')
                os.rmdir(path)


@pytest.fixture
def children(tmp_path):
    made = []

    def make(hot_mibs):
        for k, hot in enumerate(hot_mibs):
            made.append(Child(tmp_path, str(k), hot))
        return made
    yield make
    for child in made:
        child.close()


def _a_window_passes(children):
    """Wait for the kdamond to run on the pages, every child to go over its
    hot set twice and the kdamond to end a window since. A commit only
    wakes the thread that starts the kdamond (or hands it new pages), and
    its files answer nothing until it has: not waiting for that left the
    first collect() to wait out the kdamond's first two windows against
    its own deadline (2.05 of 2.7 s here), which a loaded CI machine once
    passed: a lost window."""
    (first,) = wait_for(lambda: (windows := _kdamond_windows()) is not None
                        and (windows,), timeout=30, interval=0.01,
                        message='the kdamond running on the pages')
    for c in children:
        c.wait_passes(2)
    wait_for(lambda: (_kdamond_windows() or 0) > first, timeout=30,
             interval=0.01, message='a window of the kdamond after %d' % first)


def _period(samplers, children):
    """One period as memagg-compute paces it, a window long: begin every
    sampler, commit, let every child go over its hot set and the kdamond
    end a window, collect: [result or OSError] per sampler."""
    for s in samplers:
        s.begin()
    _native.damon_commit()
    _a_window_passes(children)
    results = []
    for s in samplers:
        try:
            results.append(s.collect())
        except OSError as exc:
            results.append(exc)
    return results


def test_counts_exact_for_processes_sharing_the_kdamond(children):
    kids = children([8, 24, 40])
    samplers = [c.sampler() for c in kids]
    try:
        rounds = [_period(samplers, kids) for _ in range(4)]
        # One kernel thread for the three.
        assert len(damon.memagg_running()) == 1
    finally:
        for s in samplers:
            s.close()
    assert damon.memagg_running() == []
    for results in rounds:
        for child, result in zip(kids, results):
            assert not isinstance(result, OSError), result
            assert result['backend'] == 'damon_memcg'
            assert result['sampled'] == N
            assert result['accessed'] == child.truth(), (
                child.hot_mib, result)
    pids = {r['kdamond_pid'] for results in rounds for r in results}
    assert len(pids) == 1 and pids.pop() > 0


def test_a_redraw_keeps_the_others_exact(children):
    kids = children([8, 24, 40])
    samplers = [c.sampler() for c in kids]
    try:
        _period(samplers, kids)
        # A new n is a new draw: its pages reach the running kdamond by a
        # commit, while the others' windows go on.
        samplers[0].n = 2 * N
        rounds = [_period(samplers, kids) for _ in range(5)]
    finally:
        for s in samplers:
            s.close()
    for results in rounds:
        for child, result in zip(kids[1:], results[1:]):
            assert not isinstance(result, OSError), result
            assert result['accessed'] == child.truth(), rounds
    redrawn = [r for r, *_ in rounds]
    # While its commit is under way its windows count the pages before the
    # draw; the window the commit landed in (or two, when the landing
    # straddles a period's end) is lost for it alone; then its new pages.
    old = [r for r in redrawn if not isinstance(r, OSError)
           and r['sampled'] == N]
    lost = [r for r in redrawn if isinstance(r, OSError)]
    new = [r for r in redrawn if not isinstance(r, OSError)
           and r['sampled'] == 2 * N]
    assert redrawn == old + lost + new, redrawn
    assert 1 <= len(lost) <= 2, redrawn
    assert all(e.errno == errno.EAGAIN and 'lost' in str(e) for e in lost)
    assert len(new) >= 2, redrawn
    assert all(r['accessed'] == kids[0].truth() for r in old)
    assert all(r['accessed'] == kids[0].truth(2 * N)
               for r in new)


def test_a_refused_commit_redraws_the_refused_one(children):
    """DAMON refuses a commit whose memcg filter names a cgroup that is
    gone (EINVAL): a VM's process moved to another one. That VM loses its
    window and draws anew with the new cgroup; the others count on."""
    kids = children([8, 24])
    samplers = [c.sampler() for c in kids]
    try:
        _period(samplers, kids)
        moved = kids[0]
        new = moved.new_cgroup('moved')
        _write(os.path.join(new, 'cgroup.procs'), moved.pid)
        os.rmdir(moved.cgroup)
        # The other's redraw brings a commit, which names the gone cgroup.
        samplers[1].n = 2 * N
        rounds = [_period(samplers, kids) for _ in range(6)]
    finally:
        for s in samplers:
            s.close()
    refused = [r[0] for r in rounds if isinstance(r[0], OSError)]
    assert any(e.errno == errno.EAGAIN and
               'DAMON refused the commit' in str(e) for e in refused), rounds
    # Drawn anew in its new cgroup, it is counted again (the pages its
    # process faulted before the move stay charged to the old cgroup on
    # cgroup v1, so the count is not its hot set's), and the other's count
    # went on through the refusal, exact once its own commit landed.
    assert not isinstance(rounds[-1][0], OSError), rounds
    assert rounds[-1][0]['backend'] == 'damon_memcg'
    for results in rounds[-2:]:
        assert results[1]['accessed'] == kids[1].truth(2 * N), (
            rounds)


def test_the_first_estimate_is_warming(children):
    (kid,) = children([24])

    class OneProcess:
        def guest_memory(self, uuid):
            return type('Memory', (), dict(
                pid=kid.pid, start=kid.addr, length=TOTAL_MIB * MIB,
                method='test'))

    vm = sampling.VmSampler(OneProcess(), 'vm', N, 'damon_memcg',
                            size=sampling.SampleSize(first=N, error=0.0))
    samples = []
    try:
        vm.begin()
        for _ in range(3):
            # Periods a window long at least, as memagg-compute's.
            _a_window_passes([kid])
            # A window lost is None, its reason in vm.error.
            samples.append(vm.collect(TOTAL_MIB) or vm.error)
            vm.begin()
    finally:
        vm.close()
    assert all(isinstance(s, dict) for s in samples), samples
    assert vm.backend_name is None
    assert [s['backend'] for s in samples] == ['damon_memcg'] * 3
    assert [s['warming'] for s in samples] == [True, False, False]
    assert all(s['accessed'] == kid.truth()
               for s in samples[1:]), samples


def test_detection_and_fallbacks(children):
    supported, reason = _native.backends()['damon_memcg']
    assert supported and 'memcg' in reason
    kid, other = children([8, 8])
    # The root memory cgroup is the host's: no count of the VM alone.
    _write(os.path.join(_cgroup_root(), 'cgroup.procs'), other.pid)
    with pytest.raises(OSError) as exc:
        other.sampler()
    assert exc.value.errno == errno.EOPNOTSUPP
    assert 'root memory cgroup' in str(exc.value)
    first = kid.sampler()
    try:
        # A second sampler in the same cgroup would count the first's pages.
        with pytest.raises(OSError) as exc:
            kid.sampler()
        assert exc.value.errno == errno.EEXIST
    finally:
        first.close()
    # Host reclaim's idle pages need the regions: per_page moves it.
    per_page = kid.sampler()
    try:
        assert per_page.backend == 'damon_memcg'
        per_page.per_page = True
        assert per_page.backend == 'damon_paddr'
    finally:
        per_page.close()
