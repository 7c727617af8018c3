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

"""Per-VM accessed counts from one kept-running kdamond: accuracy and cost.

The design the WSS sampler's admin guide describes as not built
(doc/source/admin/wss-sampler.rst, "Cost"): one paddr kdamond kept running
across windows, its aggregation interval one window, its regions every
VM's sampled pages, and one ``stat`` scheme per VM whose ``ops_filters``
hold a ``memcg`` entry on that VM's memory cgroup.  Each window's accessed
count of a VM is then the growth of its scheme's ``sz_ops_filter_passed``
between two applications: one file read per VM per window, no region
directory for the kernel to create or for memagg to read.

This measures it on the host's kernel, with real processes standing in for
VMs: each child (memagg/tests/unit/native/hotset.py, a scattered hot set)
runs in a memory cgroup of its own (cgroup v1 or v2), N of its pages are
sampled, and per window the script prints each child's count against the
truth (the sampled pages inside its hot set: the child rewrites its whole
hot set many times a window), the kdamond's CPU per sampled page, and this
process's CPU per window.  ``--checks`` is the number of accessed-bit
checks per window (the sampling interval is the window over it).

The kdamond refreshes the statistics files itself (``refresh_ms``), before
it applies its schemes: the file read after window k holds the
applications up to window k - 1, and the script says so by numbering the
windows as the kernel applied them.

``--redraw-at K`` draws the first child's sample anew after window K,
writes the merged regions again and has the running kdamond take them
(``commit`` to its state file) without stopping it: what a VM drawing
anew would cost the other VMs sharing the kdamond (their counts should
stay exact, their statistics should go on), and after how many windows
the redrawn child's count is its new sample's again.

Run as root, with no memagg process using DAMON (it takes the same lock,
an flock on the DAMON sysfs tree):

    .venv/bin/python benchmarks/damon_memcg_stat.py
        [--children 3] [--total-mib 256] [--hot-mib 16 64 128]
        [--pages 2000 ...] [--window 2] [--windows 8] [--checks 1]
        [--redraw-at K]
"""
import argparse
import fcntl
import os
import random
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, os.pardir, 'memagg', 'tests', 'unit',
                                'native'))
import hotset  # noqa: E402

HOTSET = hotset.__file__
PAGE = 4096
ADMIN = '/sys/kernel/mm/damon/admin'
KD = ADMIN + '/kdamonds/0'
CTX = KD + '/contexts/0'
CG_V1 = '/sys/fs/cgroup/memory'
U32_MAX = 2 ** 32 - 1
U64_MAX = 2 ** 64 - 1


def write(path, value):
    try:
        with open(path, 'w') as f:
            f.write(str(value))
    except OSError as e:
        # A sysfs write fails at close, with no file name: say which.
        raise OSError(e.errno, e.strerror, path) from None


def read(path):
    with open(path) as f:
        return f.read().strip()


def wait_for(cond, deadline_s, what):
    end = time.monotonic() + deadline_s
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() > end:
            raise SystemExit('timed out waiting for %s' % what)
        time.sleep(0.01)


def cgroup_root():
    """Where this host's memory cgroups are made: the v1 memory hierarchy,
    else the v2 tree (its root must enable the memory controller for its
    children)."""
    if os.path.isdir(CG_V1) and os.path.exists(CG_V1 + '/cgroup.procs'):
        return CG_V1
    return '/sys/fs/cgroup'


class Child:
    """A hot-set process in a memory cgroup of its own."""

    def __init__(self, index, total_mib, hot_mib, seed, tmpdir):
        self.root = cgroup_root()
        self.name = 'memagg-probe-%d-%d' % (os.getpid(), index)
        self.cgroup = os.path.join(self.root, self.name)
        os.mkdir(self.cgroup)
        self.total = total_mib << 20
        self.hot = hot_mib << 20
        self.seed = seed
        self.passes = os.path.join(tmpdir, 'passes%d' % index)
        with open(self.passes, 'wb') as f:
            f.write(b'\0' * 8)
        procs = os.path.join(self.cgroup, 'cgroup.procs')
        # In the cgroup before it faults a page: its memory is charged there.
        self.proc = subprocess.Popen(
            [sys.executable, HOTSET, str(total_mib), str(hot_mib),
             self.passes, '--scatter', str(seed)],
            stdout=subprocess.PIPE, text=True,
            preexec_fn=lambda: write(procs, os.getpid()))
        self.addr = int(self.proc.stdout.readline())
        wait_for(lambda: self.pass_count() >= 2, 120, 'hot-set passes')
        self.ranges = hotset.hot_ranges(self.total, self.hot, seed)

    def pass_count(self):
        with open(self.passes, 'rb') as f:
            return struct.unpack('Q', f.read(8))[0]

    def sample(self, n, rng):
        """(PFN starts, how many of them are hot) for n random pages."""
        offsets = sorted(rng.sample(range(self.total // PAGE), n))
        starts, hot = [], 0
        with open('/proc/%d/pagemap' % self.proc.pid, 'rb') as pm:
            for off in offsets:
                pm.seek((self.addr // PAGE + off) * 8)
                entry = struct.unpack('Q', pm.read(8))[0]
                if not entry >> 63:
                    continue
                starts.append((entry & ((1 << 55) - 1)) * PAGE)
                byte = off * PAGE
                hot += any(s <= byte < e for s, e in self.ranges)
        return starts, hot

    def close(self):
        self.proc.kill()
        self.proc.wait()
        wait_for(lambda: not read(os.path.join(self.cgroup, 'cgroup.procs')),
                 30, 'the cgroup to empty')
        os.rmdir(self.cgroup)


def lock_damon(deadline_s):
    fd = os.open(ADMIN, os.O_RDONLY | os.O_DIRECTORY)

    def take():
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            return False
    wait_for(take, deadline_s, 'the DAMON lock (another memagg process)')
    return fd


def schedstat_ns(pid):
    return int(read('/proc/%d/schedstat' % pid).split()[0])


def setup(children, regions, sample_us, aggr_us):
    nr = int(read(ADMIN + '/kdamonds/nr_kdamonds'))
    for i in range(nr):
        try:
            write(ADMIN + '/kdamonds/%d/state' % i, 'off')
        except OSError:
            pass
    write(ADMIN + '/kdamonds/nr_kdamonds', 1)
    write(KD + '/contexts/nr_contexts', 1)
    write(CTX + '/operations', 'paddr')
    write(CTX + '/monitoring_attrs/intervals/sample_us', sample_us)
    write(CTX + '/monitoring_attrs/intervals/aggr_us', aggr_us)
    write(CTX + '/monitoring_attrs/intervals/update_us', 3600 * 10 ** 6)
    write(CTX + '/targets/nr_targets', 1)
    write_regions(regions)
    # The last scheme matches every region: its nr_tried counts the
    # applications (this kernel's stats have no nr_snapshots).
    write(CTX + '/schemes/nr_schemes', len(children) + 1)
    for i in range(len(children) + 1):
        s = '%s/schemes/%d' % (CTX, i)
        write(s + '/action', 'stat')
        write(s + '/access_pattern/nr_accesses/min',
              1 if i < len(children) else 0)
        write(s + '/access_pattern/nr_accesses/max', U32_MAX)
        write(s + '/access_pattern/sz/min', 0)
        write(s + '/access_pattern/sz/max', U64_MAX)
        write(s + '/access_pattern/age/min', 0)
        write(s + '/access_pattern/age/max', U32_MAX)
        if i == len(children):
            continue
        write(s + '/ops_filters/nr_filters', 1)
        f = s + '/ops_filters/0'
        write(f + '/type', 'memcg')
        write(f + '/memcg_path', '/' + children[i].name)
        write(f + '/matching', 'Y')
        write(f + '/allow', 'Y')
    write(KD + '/refresh_ms', 1)


def write_regions(regions):
    write(CTX + '/monitoring_attrs/nr_regions/min', len(regions))
    write(CTX + '/monitoring_attrs/nr_regions/max', len(regions))
    base = CTX + '/targets/0/regions'
    write(base + '/nr_regions', len(regions))
    for i, start in enumerate(regions):
        write('%s/%d/start' % (base, i), start)
        write('%s/%d/end' % (base, i), start + PAGE)


def teardown():
    try:
        write(KD + '/state', 'off')
    except OSError:
        pass
    write(ADMIN + '/kdamonds/nr_kdamonds', 0)


def stats(nr_children, nr_regions):
    """[(applications, bytes passed)] per child's scheme, as last
    refreshed."""
    apps = int(read('%s/schemes/%d/stats/nr_tried' % (CTX, nr_children)))
    return [(apps // nr_regions,
             int(read('%s/schemes/%d/stats/sz_ops_filter_passed' % (CTX, i))))
            for i in range(nr_children)]


def run(args):
    # Not the children's seeds: the same seed would draw the sample from
    # the same stream as their hot chunks.
    rng = random.Random('sample-%d' % args.seed)
    children = []
    with tempfile.TemporaryDirectory() as tmpdir:
        try:
            for i, hot in enumerate(args.hot_mib[:args.children]):
                children.append(Child(i, args.total_mib, hot,
                                      args.seed + i, tmpdir))
            samples = [c.sample(args.pages[i % len(args.pages)], rng)
                       for i, c in enumerate(children)]
            lockfd = lock_damon(600)
            try:
                measure(args, children, samples, rng)
            finally:
                teardown()
                os.close(lockfd)
        finally:
            for c in children:
                c.close()


def redraw(args, children, samples, rng):
    """Draw the first child's sample anew and have the running kdamond
    take the merged regions (commit): the regions, the time to write them
    and the commit's."""
    nr_before = sum(len(starts) for starts, _ in samples)
    samples[0] = children[0].sample(args.pages[0], rng)
    regions = sorted({s for starts, _ in samples for s in starts})
    if len(regions) != nr_before:
        # The windows are numbered by nr_tried over the number of regions.
        raise SystemExit('the redraw found %d pages resident, not %d: run '
                         'it on children whose pages are all resident' % (
                             len(samples[0][0]), args.pages[0]))
    t0 = time.monotonic()
    write_regions(regions)
    t1 = time.monotonic()
    write(KD + '/state', 'commit')
    return len(regions), t1 - t0, time.monotonic() - t1


def measure(args, children, samples, rng):
    window_us = int(args.window * 1e6)
    regions = sorted({s for starts, _ in samples for s in starts})
    n_total = sum(len(starts) for starts, _ in samples)
    t0 = time.monotonic()
    try:
        setup(children, regions, window_us // args.checks, window_us)
    except OSError as e:
        raise SystemExit(
            'DAMON refused %s: %s. This design needs DAMON sysfs with '
            'paddr operations, ops_filters of type memcg and the '
            'kdamond\'s refresh_ms file.' % (e.filename, e.strerror))
    print('setup: %d regions written in %.1f ms' %
          (len(regions), (time.monotonic() - t0) * 1e3))
    write(KD + '/state', 'on')
    kpid = int(read(KD + '/pid'))

    def snap():
        return stats(len(children), len(regions))
    # Counted from the first refresh on, so every window is a whole one.
    last = wait_for(lambda: snap()[0][0] > 0 and snap(), args.window * 4,
                    'a first window')
    cpu0 = schedstat_ns(kpid)
    print('%6s  %s  %12s  %10s' % (
        'window', '  '.join('%5s/%-5s' % ('cnt%d' % i, 'true')
                            for i in range(len(children))),
        'kdamond us/pg', 'reads us'))
    errors = []
    committed = None
    for _ in range(args.windows):
        prev_snap = last[0][0]
        wait_for(lambda: snap()[0][0] > prev_snap, args.window * 4,
                 'the next window')
        r0 = time.thread_time()
        cur = snap()
        reads_us = (time.thread_time() - r0) * 1e6
        cpu1 = schedstat_ns(kpid)
        cells = []
        # A window may pass unread (a slow redraw): the mean per window.
        windows = cur[0][0] - last[0][0]
        for i, ((_, passed), (_, lpassed)) in enumerate(zip(cur, last)):
            count = (passed - lpassed) // PAGE // windows
            truth = samples[i][1]
            cells.append('%5d/%-5d' % (count, truth))
            # The redrawn child's windows up to the one the commit landed
            # in may mix its two samples: a reading over any of them is
            # left out of the error.
            if truth and (i or committed is None or
                          last[0][0] >= committed):
                errors.append(abs(count - truth) / truth)
        print('%6d  %s  %12.2f  %10.0f' % (
            cur[0][0], '  '.join(cells),
            (cpu1 - cpu0) / 1e3 / n_total, reads_us))
        last, cpu0 = cur, cpu1
        if args.redraw_at and cur[0][0] == args.redraw_at:
            nr, wrote, took = redraw(args, children, samples, rng)
            # The kdamond took the commit before the write returned, at the
            # end of a window whose check had the old regions and whose
            # application the new ones (not yet checked: none accessed):
            # at the latest the window after the one the statistics hold.
            committed = snap()[0][0] + 1
            print('redrawn child 0 (%d sampled pages hot now); %d regions '
                  'written in %.1f s, committed in %.1f ms; its windows up '
                  'to %d may mix both samples' % (
                      samples[0][1], nr, wrote, took * 1e3, committed))
    print('pages sampled: %s; mean relative error of the counts %.2f %%, '
          'worst %.2f %%' % (
              ' + '.join(str(len(s)) for s, _ in samples),
              100 * sum(errors) / max(len(errors), 1),
              100 * max(errors or [0])))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--children', type=int, default=3)
    parser.add_argument('--total-mib', type=int, default=256)
    parser.add_argument('--hot-mib', type=int, nargs='+',
                        default=[16, 64, 128, 32, 96, 200])
    parser.add_argument('--pages', type=int, nargs='+', default=[2000],
                        help='pages sampled per child (cycled)')
    parser.add_argument('--window', type=float, default=2.0)
    parser.add_argument('--windows', type=int, default=8)
    parser.add_argument('--checks', type=int, default=1)
    parser.add_argument('--seed', type=int, default=17)
    parser.add_argument('--redraw-at', type=int, default=0,
                        help='draw the first child\'s sample anew after '
                             'this window, the kdamond kept running')
    run(parser.parse_args())


if __name__ == '__main__':
    main()
