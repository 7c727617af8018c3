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

"""Host-side reclaim (issue 19, "Speed"): the same guests for the same
number of periods under three regimes, one after the other in one run.

Each regime boots --guests tiny TCG test guests (memagg/demo/image) of
--memory-mb each, anonymous RAM (QEMU's default, transparent huge pages),
every other one without a balloon device (the first has one). Each guest
touches --cold-mb + --hot-mb then keeps --hot-mb hot: the rest is resident
in QEMU and never touched again. memagg-compute's period
(Collector.run_period, as its periodic task runs it) then runs every
--period s for --periods periods, with a swap file of the host on in every
regime (zswap in front of it with --zswap):

- ``none``: no reclaim ([local_policy] min_guest_mb = the booked size, so
  the balloon never moves; [host_reclaim] controller = none).
- ``balloon``: memagg's balloon alone, as before issue 19 (min_guest_mb
  --min-guest-mb).
- ``reclaim``: the balloon and host reclaim (controller = senpai, cold
  age two periods).

Figures, all guests together, over the measured periods:

- freed: QEMU's resident memory before the first period less after the
  last, MiB; beside it what the balloons hold (booked less current) and
  what host reclaim holds in swap (smaps_rollup Swap).
- promotions: QEMU's major faults per minute, and as a percentage of the
  guests' WSS max-average per minute (the unit of [host_reclaim]
  promotion_slo, 0.2).
- throughput: what the guests' own workload read of its hot set, MiB/s
  (its heartbeat's passes over the hot set, each --hot-mb).
- CPU: this process's CPU (all threads) plus the sampler's kdamond kernel
  threads, per VM per period, ms.

Targets: reclaim frees >= 1.5x what balloon frees, its throughput within
5 % of none's, its promotions under the SLO. Prints a table, the ratios and
a verdict per target; exits non-zero only when something failed to run,
never on the figures. A memagg-compute balloons every guest of the
libvirtd: run it with no other real-guest test at the same time.

Run as root:  .venv/bin/python benchmarks/host_reclaim.py [--quick]
"""
import argparse
import os
import re
import shutil
import sys
import tempfile
import time

import libvirt

from memagg.compute import reclaim
from memagg.tests import host_swap
from memagg.tests.functional import guest_fixtures
from memagg.demo import guest as vm

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compute_period  # noqa: E402

REGIMES = ('none', 'balloon', 'reclaim')
SLO_PCT = 0.2


def _passes(guest):
    beats = re.findall(r'MEMAGG HEARTBEAT \d+ passes=(\d+)',
                       guest.console_text())
    return int(beats[-1]) if beats else 0


def _wait_passes_move(guest, timeout=60):
    """Wait for a heartbeat whose passes differ from the last one's: the
    reader runs over the new hot set."""
    start = _passes(guest)
    deadline = time.monotonic() + timeout
    while _passes(guest) == start:
        if time.monotonic() > deadline:
            raise RuntimeError('%s: its reader made no pass in %d s'
                               % (guest.name, timeout))
        guest.wait_console(r'MEMAGG HEARTBEAT', timeout,
                           after=len(guest.console_text()))


def _snapshot(loop, guests):
    """Per guest (RSS MiB, swapped MiB, major faults, passes) now."""
    out = {}
    for guest in guests:
        mem = loop.driver.guest_memory(guest.uuid)
        swapped, majflt = reclaim.process_counters(mem.pid)
        out[guest.uuid] = (host_swap.rss_mb(mem.pid), swapped, majflt,
                           _passes(guest))
    return out


def run_regime(name, args, conf, conn, workdir):
    """Boot the guests, run the periods under regime ``name``; a dict of
    its figures."""
    conf.config(min_guest_mb=args.memory_mb if name == 'none'
                else args.min_guest_mb, group='local_policy')
    conf.config(controller='senpai' if name == 'reclaim' else 'none',
                group='host_reclaim')
    guests = [vm.Guest(conn, workdir, 'memagg-bench-reclaim-%s-%d'
                       % (name, k), memory_mb=args.memory_mb,
                       balloon='stats' if k % 2 == 0 else 'none',
                       memfd=False)
              for k in range(args.guests)]
    loop = None
    try:
        for guest in guests:
            guest.dom = conn.createXML(guest.xml)
        for guest in guests:
            guest.wait_console(r'MEMAGG READY', 300)
        for guest in guests:
            guest.set_hot(args.cold_mb + args.hot_mb)
            guest.set_hot(args.hot_mb)
        for guest in guests:
            _wait_passes_move(guest)
        loop = guest_fixtures.PeriodLoop(args.period, 'memagg-bench-reclaim-')
        before = _snapshot(loop, guests)
        watch = compute_period.KdamondWatch().start()
        c0, t0 = time.process_time(), time.monotonic()
        loop.start()
        deadline = t0 + args.periods * args.period * 3 + 60
        while len(loop.reports) + len(loop.errors) < args.periods:
            if loop.errors or time.monotonic() > deadline:
                raise RuntimeError('%s: periods failed or late: %s'
                                   % (name, loop.errors))
            time.sleep(0.2)
        after = _snapshot(loop, guests)
        wall = time.monotonic() - t0
        cpu = time.process_time() - c0
        kdamond = watch.stop()
        cpu -= watch.own_cpu
        report = loop.reports[-1]
        ballooned = 0.0
        for guest in guests:
            # info()[2]: the balloon's current size, KiB.
            ballooned += args.memory_mb - guest.dom.info()[2] / 1024.0
        wss = sum(i.wss_maxavg_mb or 0 for i in report.instances
                  if any(i.uuid == g.uuid for g in guests))
        periods = len(loop.reports)
    finally:
        if loop is not None:
            loop.stop()
        for guest in guests:
            guest.destroy()
    majflt = sum(after[u][2] - before[u][2] for u in before)
    per_min = majflt / wall * 60.0
    return {
        'freed': sum(before[u][0] - after[u][0] for u in before),
        'ballooned': ballooned,
        'swapped': sum(after[u][1] for u in after),
        'promotions': per_min,
        'pct': 100.0 * per_min / (wss * 256) if wss else 0.0,
        'throughput': sum(after[u][3] - before[u][3]
                          for u in before) * args.hot_mb / wall,
        'cpu_ms': (cpu + kdamond) / (periods * len(guests)) * 1e3,
        'periods': periods, 'wall': wall,
    }


def _ratio(a, b):
    return a / b if b else 0.0


def table(results):
    """The table's lines: a header, one row per regime."""
    lines = ['regime  | freed MiB  balloon  swap | promotions/min  '
             '%WSS/min  SLO | MiB/s read | CPU ms/VM/period | '
             'freed/balloon  read/none']
    for name in REGIMES:
        r = results[name]
        lines.append(
            '%-7s | %9.1f %8.1f %5.1f | %14.1f %9.3f %4.2f | %10.1f | '
            '%16.2f | %12.2fx %9.2fx'
            % (name, r['freed'], r['ballooned'], r['swapped'],
               r['promotions'], r['pct'], SLO_PCT, r['throughput'],
               r['cpu_ms'], _ratio(r['freed'], results['balloon']['freed']),
               _ratio(r['throughput'], results['none']['throughput'])))
    return lines


def verdicts(results):
    """Lines 'target: ... met|missed', then the verdict."""
    rec, bal, none = (results['reclaim'], results['balloon'],
                      results['none'])
    freed = _ratio(rec['freed'], bal['freed'])
    read = _ratio(rec['throughput'], none['throughput'])
    checks = [
        ('freed reclaim / balloon >= 1.5x', '%.2fx' % freed, freed >= 1.5),
        ('read reclaim / none within 5 %', '%.2fx' % read, read >= 0.95),
        ('promotions reclaim under the SLO (%.2f %%WSS/min)' % SLO_PCT,
         '%.3f' % rec['pct'], rec['pct'] <= SLO_PCT),
    ]
    lines = ['target: %s: %s %s' % (what, value, 'met' if ok else 'missed')
             for what, value, ok in checks]
    missed = sum(1 for *_, ok in checks if not ok)
    lines.append('verdict: %s' % ('every target met' if not missed else
                                  '%d of %d targets missed'
                                  % (missed, len(checks))))
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--guests', type=int, default=2,
                        help='guests per regime, every other one without '
                             'a balloon (default 2)')
    parser.add_argument('--memory-mb', type=int, default=384,
                        help='RAM of each guest (default 384)')
    parser.add_argument('--hot-mb', type=int, default=40,
                        help='hot set of each guest (default 40)')
    parser.add_argument('--cold-mb', type=int, default=160,
                        help='touched once, then cold (default 160)')
    parser.add_argument('--min-guest-mb', type=int, default=128,
                        help='[local_policy] min_guest_mb of the balloon '
                             'regimes (default 128)')
    parser.add_argument('--periods', type=int, default=40,
                        help='measured periods per regime (default 40)')
    parser.add_argument('--period', type=int, default=3,
                        help='collect_interval, s (default 3)')
    parser.add_argument('--zswap', action='store_true',
                        help='zswap on in front of the swap file')
    parser.add_argument('--quick', action='store_true',
                        help='CI: 2 guests of 256 MiB, 6 periods')
    args = parser.parse_args()
    if args.quick:
        args.guests, args.memory_mb, args.cold_mb = 2, 256, 120
        args.periods = 6
    if args.guests < 2:
        parser.error('--guests: at least 2 (one without a balloon), got %d'
                     % args.guests)
    if not 0 < args.hot_mb + args.cold_mb <= args.memory_mb * 3 // 4:
        parser.error('--hot-mb + --cold-mb: must be positive and at most '
                     '3/4 of --memory-mb, got %d'
                     % (args.hot_mb + args.cold_mb))
    if args.periods < 3 or args.period < 1:
        parser.error('--periods: at least 3, --period: at least 1 s')
    if os.geteuid() != 0:
        parser.error('needs root: swapon, pagemap, DAMON')
    # Killed (e.g. by timeout), it still destroys the guests and the swap.
    conf = compute_period.period_conf(args.period)
    conf.config(cold_age_s=2 * args.period, grow_mb=32,
                group='host_reclaim')
    conn = libvirt.open(guest_fixtures.ensure_libvirtd())
    workdir = tempfile.mkdtemp(prefix='memagg-bench-', dir='/var/tmp')
    os.chmod(workdir, 0o755)
    results = {}
    try:
        with host_swap.swap_file(2048, zswap=args.zswap):
            for name in REGIMES:
                results[name] = run_regime(name, args, conf, conn,
                                           workdir)
                print('%s done: %d periods in %.0f s' % (
                    name, results[name]['periods'], results[name]['wall']),
                    file=sys.stderr, flush=True)
    finally:
        conn.close()
        shutil.rmtree(workdir, ignore_errors=True)
        conf.cleanUp()
    print('%d guests x %d MiB (hot %d, cold %d; every other one without a '
          'balloon), %d periods of %d s per regime, swap file%s'
          % (args.guests, args.memory_mb, args.hot_mb, args.cold_mb,
             args.periods, args.period, ' + zswap' if args.zswap else ''))
    for line in table(results) + verdicts(results):
        print(line)
    rec, bal = results['reclaim'], results['balloon']
    print('cpu reclaim / balloon: %.2fx'
          % _ratio(rec['cpu_ms'], bal['cpu_ms']))


if __name__ == '__main__':
    main()
