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

"""CPU of memagg-compute's period per VM, with real guests (TCG) under
libvirt, against the classic wss tool's method on the same guests.

Boots GUESTS tiny test guests (memagg/demo/image), each with a hot set of
its own, and runs memagg-compute's period (Collector.run_period: balloon
stats, the native sampler of every VM, the estimators, the local policy)
every PERIOD s, as its periodic task does, after WARMUP periods: a VM's
first window samples sampler_pages, the next ones the n its confidence
asks, and that first move of n sets up the host kdamond's regions (about
1.3 s for 43,000 regions here, once per VM start). Their CPU is printed
apart, per VM; the figure compared is the steady period's.

- memagg: this process's CPU (all threads) over the measured periods + the
  CPU of the kdamond kernel threads the sampler drives (read from
  /proc/<pid>/schedstat by a watcher thread every 0.1 s, whose own CPU is
  left out; a kdamond's last 0.1 s before it exits is missed).  libvirtd's
  CPU over the same span is printed beside it: memoryStats() and the
  balloon go through it, and other clients of libvirtd would inflate it.
- wss: per VM, write 1 to /proc/<qemu pid>/clear_refs, wait the period,
  sum Referenced over /proc/<qemu pid>/smaps.  CPU = this process's CPU
  (the kernel's page-table walks are charged to it).

Both are divided by periods x VMs.  Target (issue 17): <= 5 ms per VM per
period.

Run as root:  .venv/bin/python benchmarks/compute_period.py
              [--guests 6] [--memory-mb 128] [--periods 10] [--period 3]
              [--warmup 3]
              [--thp] [--profile]
"""
import argparse
import cProfile
import os
import pstats
import shutil
import sys
import tempfile
import threading
import time

import libvirt
from oslo_config import fixture as config_fixture

from memagg.compute import collector as collector_mod
from memagg.compute import memory as memory_mod
from memagg.conf import CONF
from memagg.drivers.hypervisor import libvirt_driver
from memagg.tests.functional import guest_fixtures
from memagg.demo import guest as vm

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _sigterm  # noqa: E402
import _wss_tool  # noqa: E402


def _schedstat_s(pid):
    try:
        with open('/proc/%s/schedstat' % pid) as f:
            return int(f.read().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


def _comm(pid):
    try:
        with open('/proc/%s/comm' % pid) as f:
            return f.read().strip()
    except OSError:
        return ''


class KdamondWatch:
    """CPU of every kdamond thread seen while running, in s."""

    def __init__(self):
        self._first = {}
        self._last = {}
        self.own_cpu = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _poll(self):
        for pid in os.listdir('/proc'):
            if pid.isdigit() and _comm(pid).startswith('kdamond'):
                cpu = _schedstat_s(pid)
                if cpu is not None:
                    self._first.setdefault(pid, cpu)
                    self._last[pid] = cpu

    def _run(self):
        c0 = time.thread_time()
        while not self._stop.wait(0.1):
            self._poll()
        self.own_cpu = time.thread_time() - c0

    def start(self):
        self._poll()
        # Threads already running count from now, new ones from birth.
        self._born_before = set(self._first)
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        self._thread.join()
        return sum(last - (self._first[pid] if pid in self._born_before
                           else 0.0)
                   for pid, last in self._last.items())


def libvirtd_cpu():
    total = 0.0
    for pid in os.listdir('/proc'):
        if pid.isdigit() and _comm(pid) == 'libvirtd':
            try:
                with open('/proc/%s/stat' % pid) as f:
                    fields = f.read().rsplit(')', 1)[1].split()
                total += (int(fields[11]) + int(fields[12])) / os.sysconf(
                    'SC_CLK_TCK')
            except (OSError, ValueError, IndexError):
                pass
    return total


def wss_tool(pids_ranges, period):
    """One period of the classic method over every VM; CPU seconds."""
    c0 = time.process_time()
    for pid, _start, _length in pids_ranges:
        _wss_tool.clear_refs(pid)
    c1 = time.process_time()
    time.sleep(period)
    c2 = time.process_time()
    for pid, start, length in pids_ranges:
        _wss_tool.referenced_bytes(pid, start, length)
    return (c1 - c0) + (time.process_time() - c2)


def period_conf(period):
    """memagg's CONF with no files, memagg-compute's period every
    ``period`` s (balloon statistics every 2 s) and the sampler chosen at
    run time; returns the fixture, to set more options on. A SIGTERM (a
    timeout) exits, so that the caller's cleanup still destroys its
    guests."""
    _sigterm.exit_on_sigterm()
    conf = config_fixture.Config(CONF)
    conf.setUp()
    CONF([], project='memagg', default_config_files=[])
    conf.config(collect_interval=period, balloon_stats_period=2,
                group='compute')
    conf.config(sampler_backend='auto', group='wss')
    return conf


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--guests', type=int, default=6,
                        help='real guests (default 6)')
    parser.add_argument('--memory-mb', type=int, default=128,
                        help='RAM of each guest (default 128)')
    parser.add_argument('--periods', type=int, default=10,
                        help='measured periods (default 10)')
    parser.add_argument('--period', type=float, default=3.0,
                        help='collect_interval, s (default 3)')
    parser.add_argument('--warmup', type=int, default=3,
                        help='periods before the measured ones (default 3)')
    parser.add_argument('--thp', action='store_true',
                        help="guest RAM as QEMU's default (anonymous, "
                             "transparent huge pages) rather than a memfd")
    parser.add_argument('--profile', action='store_true',
                        help="then as many periods again under cProfile, "
                             "and where their process CPU went (the "
                             "figure above is taken without it)")
    args = parser.parse_args()
    if os.geteuid() != 0:
        parser.error('needs root: PFNs in pagemap, clear_refs and DAMON')
    conf = period_conf(args.period)
    conf.config(estimator='badis', group='wss')
    conf.config(min_guest_mb=args.memory_mb, group='local_policy')

    conn = libvirt.open(guest_fixtures.ensure_libvirtd())
    workdir = tempfile.mkdtemp(prefix='memagg-bench-', dir='/var/tmp')
    guests = [vm.Guest(conn, workdir, 'memagg-bench-period-%d' % k,
                       memory_mb=args.memory_mb, memfd=not args.thp)
              for k in range(args.guests)]
    driver = memory = None
    try:
        for guest in guests:
            guest.dom = conn.createXML(guest.xml)
        for guest in guests:
            guest.wait_console(r'MEMAGG READY', 300)
        for k, guest in enumerate(guests):
            guest.set_hot(8 + 12 * (k % 6))
        print('guests up and hot', file=sys.stderr, flush=True)
        driver = libvirt_driver.LibvirtDriver(guest_fixtures.URI)
        memory = memory_mod.MemoryManager(driver, CONF)
        collector = collector_mod.Collector(driver, 'bench-period', memory)
        c0 = time.process_time()
        for _ in range(args.warmup):
            t0 = time.monotonic()
            collector.run_period()
            time.sleep(max(0.0, args.period - (time.monotonic() - t0)))
        warmup = time.process_time() - c0

        watch = KdamondWatch().start()
        lv0 = libvirtd_cpu()
        c0 = time.process_time()
        wall = []
        for _ in range(args.periods):
            t0 = time.monotonic()
            report = collector.run_period()
            wall.append(time.monotonic() - t0)
            time.sleep(max(0.0, args.period - wall[-1]))
        process = time.process_time() - c0
        kdamond = watch.stop()
        process -= watch.own_cpu
        lv = libvirtd_cpu() - lv0
        sampled = sum(1 for i in report.instances
                      if i.estimator and 'sampler' in i.estimator)
        print('measured periods done', file=sys.stderr, flush=True)
        profile = None
        if args.profile:
            profile = cProfile.Profile(time.process_time)
            for _ in range(args.periods):
                t0 = time.monotonic()
                profile.runcall(collector.run_period)
                time.sleep(max(0.0, args.period - (time.monotonic() - t0)))

        ranges = []
        for guest in guests:
            mem = driver.guest_memory(guest.uuid)
            ranges.append((mem.pid, mem.start, mem.length))
        theirs = sum(wss_tool(ranges, args.period)
                     for _ in range(args.periods))
    finally:
        if memory is not None:
            memory.close()
        if driver is not None:
            driver.close()
        for guest in guests:
            guest.destroy()
        conn.close()
        shutil.rmtree(workdir, ignore_errors=True)
        conf.cleanUp()

    per = args.periods * args.guests
    ours = (process + kdamond) / per
    print('%d guests x %d MiB (%s), %d periods of %.1f s; %d of %d '
          'estimated by the sampler in the last period'
          % (args.guests, args.memory_mb, 'THP' if args.thp else 'memfd',
             args.periods, args.period, sampled, args.guests))
    print('warm-up | %d periods: memagg process %.1f ms per VM (first '
          'draws and the kdamond\'s regions)'
          % (args.warmup, warmup / args.guests * 1e3))
    print('per VM per period | memagg %6.2f ms (process %5.2f, kdamond '
          '%5.2f; libvirtd %5.2f besides) | wss %6.2f ms | ratio %5.1fx | '
          'period wall %.2f s (max %.2f) | target <= 5 ms'
          % (ours * 1e3, process / per * 1e3, kdamond / per * 1e3,
             lv / per * 1e3, theirs / per * 1e3,
             theirs / per / ours if ours else 0,
             sum(wall) / len(wall), max(wall)))
    if profile is not None:
        pstats.Stats(profile).sort_stats('tottime').print_stats(25)


if __name__ == '__main__':
    main()
