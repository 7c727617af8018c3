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

"""memagg._native.Sampler against a real process with a known hot set."""
import errno
import os
import shutil
import signal
import struct
import subprocess
import sys
import threading

import pytest

from memagg import _native
from memagg.tests import damon
from memagg.tests.polling import wait_for

# The host lane (memagg/tests/lanes.py): DAMON: the host's kdamonds and its
# tracefs instance.
pytestmark = pytest.mark.host

PAGE = 4096
MIB = 1 << 20
HOTSET = os.path.join(os.path.dirname(__file__), 'hotset.py')
BACKENDS = ('page_idle', 'damon_paddr', 'damon_memcg', 'damon_vaddr',
            'clear_refs')

needs_root = pytest.mark.skipif(
    os.geteuid() != 0,
    reason='PFNs in pagemap, clear_refs and DAMON need root')


class HotChild:
    def __init__(self, proc, addr, length, passes_path):
        self.pid = proc.pid
        self.addr = addr
        self.length = length
        self._passes_path = passes_path

    def passes(self):
        with open(self._passes_path, 'rb') as f:
            return struct.unpack('Q', f.read(8))[0]

    def wait_passes(self, count):
        """Wait until the child has gone over its hot set count more times."""
        target = self.passes() + count
        wait_for(lambda: self.passes() >= target, timeout=30,
                 interval=0.01, message='%d passes over the hot set' % count)


@pytest.fixture(scope='module')
def hot_child(tmp_path_factory):
    """256 MiB mapped, the first 64 MiB kept hot: true fraction 0.25.
    Pinned, so that no compaction of the host moves a sampled page."""
    passes = tmp_path_factory.mktemp('hot') / 'passes'
    passes.write_bytes(bytes(8))
    proc = subprocess.Popen([sys.executable, HOTSET, '256', '64',
                             str(passes), '--pin'], stdout=subprocess.PIPE,
                            text=True)
    addr = int(proc.stdout.readline())
    yield HotChild(proc, addr, 256 * MIB, passes)
    proc.kill()
    proc.wait()


def test_backends_report_support_and_reason():
    backends = _native.backends()
    assert tuple(backends) == BACKENDS
    for name, (supported, reason) in backends.items():
        assert isinstance(supported, bool)
        assert reason, name
    assert backends['clear_refs'][0]


@needs_root
@pytest.mark.slow
@pytest.mark.parametrize('backend', BACKENDS)
def test_fraction_matches_hot_set(hot_child, backend):
    supported, reason = _native.backends()[backend]
    pid, addr, length = hot_child.pid, hot_child.addr, hot_child.length
    if not supported:
        with pytest.raises(OSError) as exc:
            _native.Sampler(pid, addr, length, backend=backend)
        assert backend in str(exc.value)
        assert 'not supported' in str(exc.value)
        return
    sampler = _native.Sampler(pid, addr, length, n=2000, backend=backend,
                              seed=7, sample_interval=0.5)
    try:
        assert sampler.backend == backend
        sampler.begin()
        if backend == 'damon_memcg':
            # Its kdamond takes the drawn pages through its commit thread,
            # in its own time: two passes of the child (what ended the
            # window here once, in a loaded run) need not see it done. The
            # window counts once the kdamond has ended one on them.
            _native.damon_commit()
            _wait_for_a_window_on_the_pages()
        # The period: two whole passes over the hot set after begin().
        hot_child.wait_passes(2)
        result = sampler.collect()
    finally:
        sampler.close()
    assert result['backend'] == backend
    assert result['present'] == result['sampled']
    # Nothing moves the child's pinned pages: every sample counts.
    assert result['moved'] == 0
    assert result['fraction'] == pytest.approx(0.25, abs=0.05)
    if backend.startswith('damon'):
        assert result['sampled'] == 2000
        assert result['kdamond_pid'] > 0
        assert result['kdamond_cpu_s'] >= 0


@needs_root
@pytest.mark.slow
def test_two_samplers_at_once_and_auto(hot_child):
    pid, addr, length = hot_child.pid, hot_child.addr, hot_child.length
    first = _native.Sampler(pid, addr, length // 2, n=500, seed=1,
                            sample_interval=0.3)
    second = _native.Sampler(pid, addr + length // 2, length // 2, n=500,
                             seed=2, sample_interval=0.3)
    try:
        first.begin()
        second.begin()
        hot_child.wait_passes(2)
        hot_half = first.collect()
        cold_half = second.collect()
    finally:
        first.close()
        second.close()
    # 64 MiB hot is half of the first 128 MiB and none of the second.
    assert hot_half['fraction'] == pytest.approx(0.5, abs=0.08)
    assert cold_half['fraction'] < 0.05


TRACE_EVENT = '/sys/kernel/tracing/events/damon/damos_before_apply'
TRACE_INSTANCE = '/sys/kernel/tracing/instances/memagg-damon'


@needs_root
@pytest.mark.slow
def test_two_members_of_the_host_kdamond_are_answered_through_its_trace(
        hot_child):
    """Two damon_paddr samplers share the host's kdamond: its answer comes
    from DAMON's damos_before_apply event (tools/setup.sh mounts tracefs,
    as systemd does), page by page, and matches the hot set; closing the
    last sampler removes memagg's tracefs instance."""
    if not _native.backends()['damon_paddr'][0]:
        pytest.skip('no DAMON paddr on this kernel')
    if not os.path.exists(TRACE_EVENT):
        pytest.skip('no tracefs with DAMON trace events here')
    pid, addr, length = hot_child.pid, hot_child.addr, hot_child.length
    samplers = [_native.Sampler(pid, addr + k * length // 2, length // 2,
                                n=1000, seed=k + 1, backend='damon_paddr',
                                sample_interval=0.05) for k in (0, 1)]
    try:
        for _ in range(2):
            for sampler in samplers:
                sampler.begin()
            hot_child.wait_passes(2)
            hot_half, cold_half = [s.collect() for s in samplers]
            assert os.path.isdir(TRACE_INSTANCE)
            assert hot_half['answer'] == cold_half['answer'] == 'trace'
            # 64 MiB hot is half of the first 128 MiB, none of the second.
            assert hot_half['fraction'] == pytest.approx(0.5, abs=0.08)
            assert cold_half['fraction'] < 0.05
    finally:
        for sampler in samplers:
            sampler.close()
    assert not os.path.exists(TRACE_INSTANCE)


def test_members_of_the_host_kdamond_draw_anew_in_the_same_period(
        hot_child):
    """A damon_paddr sampler counts its sample's windows on the host
    kdamond's restarts: one member's new draw shifts nearly every region
    file of the kdamond, so members that joined at different times still
    draw in the same period, and each every ``keep`` windows."""
    if not _native.backends()['damon_paddr'][0]:
        pytest.skip('no DAMON paddr on this kernel')
    pid, addr, length = hot_child.pid, hot_child.addr, hot_child.length

    def sampler(k):
        return _native.Sampler(pid, addr + k * length // 2, length // 2,
                               n=500, seed=k + 1, backend='damon_paddr',
                               sample_interval=0.02, keep=3)

    first = sampler(0)
    second = None
    try:
        first.begin()
        first.collect()
        second = sampler(1)
        pattern = []
        for _ in range(6):
            pattern.append((first.draws_next, second.draws_next))
            for s in (first, second):
                s.begin()
            for s in (first, second):
                s.collect()
    finally:
        for s in (first, second):
            if s is not None:
                s.close()
    # The second's first window draws; after it, both draw together, every
    # third window (1 or 2 times in 5).
    assert pattern[0][1] is True
    assert all(a == b for a, b in pattern[1:]), pattern
    assert sum(a for a, _ in pattern[1:]) in (1, 2), pattern


@needs_root
@pytest.mark.slow
def test_automatic_interval_follows_the_period(hot_child):
    """Without sample_interval, the restarted kdamond of damon_paddr checks
    every 1 s in the first period, then at half the period the caller
    keeps: short periods answer fast."""
    if not _native.backends()['damon_paddr'][0]:
        pytest.skip('no DAMON paddr on this kernel')
    pid, addr, length = hot_child.pid, hot_child.addr, hot_child.length
    sampler = _native.Sampler(pid, addr, length, seed=3,
                              backend='damon_paddr')
    results = []
    try:
        for _ in range(3):
            sampler.begin()
            hot_child.wait_passes(2)
            results.append(sampler.collect())
    finally:
        sampler.close()
    for result in results:
        assert result['fraction'] == pytest.approx(0.25, abs=0.05)
    # The first collect waits for the 1 s check; later ones for a check
    # paced from the previous period, well under a second here.
    assert results[0]['window_s'] >= 0.9
    assert results[2]['window_s'] < results[0]['window_s'] / 2


@needs_root
@pytest.mark.slow
def test_pages_taken_away_during_the_window_count_as_idle(tmp_path):
    """Half of the mapping given back during the window (as a balloon
    does): those samples are no longer present at collect() and count as
    idle, whoever has their PFNs now. DAMON then reads the accessed regions
    one by one (update_schemes_tried_regions) rather than their bytes."""
    backends = _native.backends()
    backend = next((b for b in ('page_idle', 'damon_paddr')
                    if backends[b][0]), None)
    if backend is None:
        pytest.skip('no PFN backend on this kernel')
    passes = tmp_path / 'passes'
    passes.write_bytes(bytes(8))
    proc = subprocess.Popen([sys.executable, HOTSET, '256', '64',
                             str(passes)], stdout=subprocess.PIPE, text=True)
    try:
        child = HotChild(proc, int(proc.stdout.readline()), 256 * MIB,
                         passes)
        try:
            sampler = _native.Sampler(child.pid, child.addr, child.length,
                                      n=2000, backend=backend, seed=11,
                                      sample_interval=0.2)
        except OSError as exc:
            pytest.skip('%s is held by another process: %s'
                        % (backend, exc))
        try:
            sampler.begin()
            proc.send_signal(signal.SIGUSR1)
            # The half is given back before the next pass.
            child.wait_passes(2)
            result = sampler.collect()
        finally:
            sampler.close()
    finally:
        proc.kill()
        proc.wait()
    # Nothing moved the child's pages (a host compaction might, a few).
    assert result['moved'] < 40, result
    assert result['present'] >= 1900, result
    assert result['fraction'] == pytest.approx(0.25, abs=0.05)


def _biggest_system_ram():
    with open('/proc/iomem') as f:
        ranges = [[int(x, 16) for x in line.split(':')[0].strip().split('-')]
                  for line in f if line.strip().endswith('System RAM')]
    return max(ranges, key=lambda r: r[1] - r[0])[0]


@pytest.fixture
def other_kdamond():
    """A running kdamond of another DAMON user and its set-up: the host's
    own where it has one (a platform's reclaim here), or one set up as a
    monitoring tool would (paddr over 16 MiB of System RAM), gone after."""
    for index, setup in damon.others().items():
        if setup['state'] == 'on':
            yield index, setup
            return
    if damon.read('nr_kdamonds') != '0':
        pytest.skip('DAMON holds kdamonds of another user, none running')
    start = _biggest_system_ram()
    ctx = '0/contexts/0/'
    for rel, value in (
            ('nr_kdamonds', 1), ('0/contexts/nr_contexts', 1),
            (ctx + 'operations', 'paddr'),
            (ctx + 'monitoring_attrs/intervals/sample_us', 5000),
            (ctx + 'monitoring_attrs/intervals/aggr_us', 100000),
            (ctx + 'monitoring_attrs/intervals/update_us', 1000000),
            (ctx + 'targets/nr_targets', 1),
            (ctx + 'targets/0/regions/nr_regions', 1),
            (ctx + 'targets/0/regions/0/start', start),
            (ctx + 'targets/0/regions/0/end', start + 16 * MIB),
            ('0/state', 'on')):
        with open('%s/%s' % (damon.KDAMONDS, rel), 'w') as f:
            f.write(str(value))
    try:
        yield 0, damon.others()[0]
    finally:
        for rel, value in (('0/state', 'off'), ('nr_kdamonds', 0)):
            with open('%s/%s' % (damon.KDAMONDS, rel), 'w') as f:
                f.write(str(value))


@needs_root
def test_another_damon_users_kdamond_runs_beside(hot_child, other_kdamond):
    """memagg's kdamonds come after another DAMON user's, which keeps
    running with its set-up while memagg samples and after. (memagg turned
    a platform's reclaim kdamond off here; the platform then wrote its
    regions into memagg's kdamond 0 during a window, which was rejected.)"""
    if not _native.backends()['damon_paddr'][0]:
        pytest.skip('no DAMON paddr on this kernel')
    index, setup = other_kdamond
    nr = damon.read('nr_kdamonds')
    sampler = _native.Sampler(hot_child.pid, hot_child.addr, hot_child.length,
                              n=500, backend='damon_paddr',
                              sample_interval=0.1)
    try:
        sampler.begin()
        ours, during = damon.memagg_running(), damon.others()
        hot_child.wait_passes(2)
        result = sampler.collect()
    finally:
        sampler.close()
    assert during.get(index) == setup, during
    assert len(ours) == 1 and ours[0] > index, ours
    assert result['fraction'] == pytest.approx(0.25, abs=0.06), result
    assert damon.others().get(index) == setup
    assert damon.read('nr_kdamonds') == nr


@needs_root
def test_damon_left_off_after_close(hot_child):
    """The tree is as long as before once the last sampler closes, and the
    kdamonds of the host's other DAMON users run as they did."""
    if not _native.backends()['damon_paddr'][0]:
        pytest.skip('no DAMON paddr on this kernel')
    pid, addr, length = hot_child.pid, hot_child.addr, hot_child.length
    nr, others = damon.read('nr_kdamonds'), damon.others()
    sampler = _native.Sampler(pid, addr, length, n=100,
                              backend='damon_paddr', sample_interval=0.1)
    sampler.begin()
    sampler.close()
    assert damon.memagg_running() == []
    assert (damon.read('nr_kdamonds'), damon.others()) == (nr, others)


@needs_root
def test_another_users_commands_keep_damon_busy_and_memagg_waits(
        hot_child, other_kdamond):
    """While another DAMON user's commands hold DAMON's sysfs lock, every
    kdamond's state and pid answer EBUSY (this machine's platform sends one
    every few seconds). memagg waits for an answer: another user's kdamond
    read then as off was left off when memagg gave its slots back, and
    memagg's own kdamond pid read as 0."""
    if not _native.backends()['damon_paddr'][0]:
        pytest.skip('no DAMON paddr on this kernel')
    index, setup = other_kdamond
    state = '%s/%d/state' % (damon.KDAMONDS, index)
    stop = threading.Event()

    def commands():
        while not stop.is_set():
            try:
                with open(state, 'w') as f:
                    f.write('update_schemes_stats')
            except OSError:
                pass  # memagg's command held the lock, or the tree moved
            stop.wait(0.02)

    def busy():
        try:
            with open(state) as f:
                f.read()
        except OSError as exc:
            return exc.errno == errno.EBUSY
        return False

    thread = threading.Thread(target=commands, daemon=True)
    thread.start()
    results = []
    try:
        wait_for(busy, timeout=30, interval=0.001,
                 message='DAMON busy with the other user\'s commands')
        for _ in range(5):
            sampler = _native.Sampler(
                hot_child.pid, hot_child.addr, hot_child.length, n=100,
                backend='damon_paddr', sample_interval=0.1)
            try:
                sampler.begin()
                hot_child.wait_passes(1)
                results.append(sampler.collect())
            finally:
                sampler.close()
            assert damon.others().get(index) == setup
    finally:
        stop.set()
        thread.join()
    assert all(r['kdamond_pid'] > 0 for r in results), results


@pytest.mark.parametrize('kwargs, name', [
    (dict(pid=0), 'pid'),
    (dict(pid=-5), 'pid'),
    (dict(start=123), 'start'),
    (dict(length=100), 'length'),
    (dict(n=0), 'n'),
    (dict(n=10 ** 7), 'n'),
    (dict(backend='magic'), 'backend'),
    (dict(seed=-1), 'seed'),
    (dict(sample_interval=0.0), 'sample_interval'),
    (dict(sample_interval='often'), 'sample_interval'),
    (dict(keep=0), 'keep'),
])
def test_bad_arguments_name_the_argument(kwargs, name):
    args = dict(pid=os.getpid(), start=0, length=MIB)
    args.update(kwargs)
    with pytest.raises(ValueError) as exc:
        _native.Sampler(**args)
    assert str(exc.value).startswith(name + ' ')


@needs_root
@pytest.mark.parametrize('n', [0, 10 ** 7, 'many'])
def test_a_bad_new_n_names_it_and_keeps_the_old(n):
    sampler = _native.Sampler(os.getpid(), 0, MIB, n=100,
                              backend='clear_refs')
    try:
        with pytest.raises(ValueError, match='^n must be an integer'):
            sampler.n = n
        assert sampler.n == 100
        sampler.n = 200
        assert sampler.n == 200
    finally:
        sampler.close()


@needs_root
def test_dead_process():
    proc = subprocess.Popen([sys.executable, '-c', 'pass'])
    proc.wait()
    with pytest.raises(OSError) as exc:
        _native.Sampler(proc.pid, 0, MIB, backend='clear_refs')
    assert 'does not exist' in str(exc.value)


@needs_root
def test_process_dies_between_begin_and_collect():
    proc = subprocess.Popen([sys.executable, HOTSET, '8', '4'],
                            stdout=subprocess.PIPE, text=True)
    addr = int(proc.stdout.readline())
    sampler = _native.Sampler(proc.pid, addr, 8 * MIB, n=100,
                              backend='clear_refs')
    sampler.begin()
    proc.kill()
    proc.wait()
    with pytest.raises(OSError) as exc:
        sampler.collect()
    assert 'does not exist' in str(exc.value)
    sampler.close()
    with pytest.raises(ValueError):
        sampler.begin()


def _kdamond_windows():
    """The running kdamond's windows so far (its first scheme's nr_tried,
    which damon_memcg's counter scheme grows by one a window), or None
    while none runs or its files answer nothing (a commit under way)."""
    try:
        for i in damon.memagg_running():
            return int(damon.read(
                '%d/contexts/0/schemes/0/stats/nr_tried' % i))
    except OSError:
        pass
    return None


def _wait_for_a_window_on_the_pages():
    """Wait until the kdamond runs on the pages committed last and has
    ended a whole window since: two more windows than first seen (the
    first may have begun before the pages were taken)."""
    (first,) = wait_for(lambda: (windows := _kdamond_windows()) is not None
                        and (windows,), 30, interval=0.01,
                        message='the kdamond running on the new pages')
    wait_for(lambda: (_kdamond_windows() or 0) >= first + 2, 30,
             interval=0.01, message='two windows of the kdamond after %d'
             % first)


@needs_root
@pytest.mark.slow
def test_damon_rearms_when_its_region_files_went_stale(hot_child):
    """The sampler keeps its DAMON region files open between periods; when
    their directories are recreated (what a real-guest run met as ENODEV,
    'cannot set DAMON region 0'), begin() sets DAMON up again and draws
    again instead of failing the period."""
    if not _native.backends()['damon_paddr'][0]:
        pytest.skip('no DAMON paddr on this kernel')
    pid, addr, length = hot_child.pid, hot_child.addr, hot_child.length
    try:
        sampler = _native.Sampler(pid, addr, length, n=500,
                                  backend='damon_paddr', sample_interval=0.1)
    except OSError as exc:
        pytest.skip('DAMON is held by another process: %s' % exc)
    try:
        sampler.begin()
        # This sampler holds the DAMON lock: the one kdamond on is its own.
        (slot,) = damon.memagg_running()
        hot_child.wait_passes(2)
        assert sampler.collect()['fraction'] == pytest.approx(0.25, abs=0.06)
        regions = ('%s/%d/contexts/0/targets/0/regions/nr_regions'
                   % (damon.KDAMONDS, slot))
        with open(regions) as f:
            nr_regions = f.read().strip()
        # Recreate the region directories behind the sampler's back.
        for value in ('0', nr_regions):
            with open(regions, 'w') as f:
                f.write(value)

        sampler.begin()
        hot_child.wait_passes(2)
        result = sampler.collect()
    finally:
        sampler.close()
    assert result['sampled'] == 500
    assert result['fraction'] == pytest.approx(0.25, abs=0.06)


@needs_root
@pytest.mark.slow
def test_damon_rejects_a_window_on_regions_it_did_not_set(hot_child):
    """Another DAMON user rewrites the kdamond's region files while it runs
    (a real run met one region over the biggest System RAM range there, and
    every sampled page read accessed). A kept sample writes no region at the
    next restart, so the kdamond then watches that user's region: the window
    is rejected (EAGAIN, as a window the host spoiled), and the next one,
    every file written again, reads the hot set."""
    if not _native.backends()['damon_paddr'][0]:
        pytest.skip('no DAMON paddr on this kernel')
    pid, addr, length = hot_child.pid, hot_child.addr, hot_child.length
    try:
        sampler = _native.Sampler(pid, addr, length, n=500,
                                  backend='damon_paddr', sample_interval=0.1)
    except OSError as exc:
        pytest.skip('DAMON is held by another process: %s' % exc)
    try:
        sampler.begin()
        (slot,) = damon.memagg_running()
        hot_child.wait_passes(2)
        assert sampler.collect()['fraction'] == pytest.approx(0.25, abs=0.06)
        regions = ('%s/%d/contexts/0/targets/0/regions'
                   % (damon.KDAMONDS, slot))
        with open(regions + '/nr_regions') as f:
            last = '%s/%d' % (regions, int(f.read()) - 1)
        with open(last + '/start') as f:
            start = int(f.read())
        # The last region grows to 2 MiB: other processes' pages.
        with open(last + '/end', 'w') as f:
            f.write(str(start + 2 * MIB))

        sampler.begin()
        with open(last + '/end') as f:
            assert int(f.read()) == start + 2 * MIB
        hot_child.wait_passes(2)
        with pytest.raises(OSError) as exc:
            sampler.collect()
        assert exc.value.errno == errno.EAGAIN
        assert 'regions memagg did not set' in str(exc.value)

        sampler.begin()
        # Written again: one page, as every region memagg sets.
        with open(last + '/start') as f, open(last + '/end') as g:
            assert int(g.read()) - int(f.read()) == PAGE
        hot_child.wait_passes(2)
        result = sampler.collect()
    finally:
        sampler.close()
    assert result['sampled'] == 500
    assert result['fraction'] == pytest.approx(0.25, abs=0.06)


HOLD_DAMON = '''
import sys
from memagg import _native
sampler = _native.Sampler(int(sys.argv[1]), int(sys.argv[2]), 1 << 20,
                          n=16, backend='damon_paddr')
print('held', flush=True)
sys.stdin.read()
sampler.close()
'''


@needs_root
@pytest.mark.slow
def test_damon_is_locked_across_mount_namespaces(hot_child):
    """A memagg process in another mount namespace with a /run of its own
    (a container, a simulated host of the test rig) holds DAMON: a sampler
    here cannot take it. With the lock a file under /run, both drove
    kdamond 0 and rewrote each other's region files."""
    supported, reason = _native.backends()['damon_paddr']
    if not supported:
        pytest.skip(reason)
    if shutil.which('unshare') is None:
        pytest.skip('no unshare(1)')
    root = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
    holder = subprocess.Popen(
        ['unshare', '-m', '--propagation', 'private', 'sh', '-c',
         'mount -t tmpfs none /run && exec "$@"', 'sh', sys.executable,
         '-c', HOLD_DAMON, str(hot_child.pid), str(hot_child.addr)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, cwd=root,
        env=dict(os.environ, PYTHONPATH=root))
    try:
        line = holder.stdout.readline()
        if line != 'held\n':
            holder.stdin.close()
            pytest.skip('the other namespace did not get DAMON: %s'
                        % holder.stderr.read()[-300:])
        with pytest.raises(OSError) as exc:
            _native.Sampler(hot_child.pid, hot_child.addr, hot_child.length,
                            n=16, backend='damon_paddr')
        assert exc.value.errno == errno.EBUSY
        assert 'in use by another memagg process' in str(exc.value)
    finally:
        if not holder.stdin.closed:
            holder.stdin.close()
        holder.wait(timeout=30)
