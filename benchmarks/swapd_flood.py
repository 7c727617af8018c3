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

"""memagg-swapd's donor port under a flood of unauthenticated peers (issue
34): 4 KiB swap-in latency through a donor that is flooded, side by side in
one run with the same donor quiet.

The servers, up for the whole run: a donor and a consumer memagg-swapd
over loopback TCP, started as benchmarks/swap_nbd_fio.py starts its
memagg-sealed server (_nbd_peers.MemaggSwapdSealed): the grant made over
their control sockets, the pages sealed by the consumer and every frame
authenticated (the defaults), the donor port at its default caps and
deadlines ([swapd] max_connections, max_connections_per_peer,
idle_timeout, read_timeout) and the donor logging at info, as deployed.
The export (--size-mb) is first prefilled whole with 1 MiB writes, so that
every read goes to the donor.

The workload: fio's nbd engine (as swap_nbd_fio.py runs it), 4 KiB random
reads at queue depth 1 on the consumer's export for --runtime seconds.
That is the path of a guest's swap-in: QEMU's NBD client reads 4 KiB from
the consumer memagg-swapd, which fetches them from the donor. fio stands in
for the guest because a TCG guest's own swap-in time is dominated by its
emulation and would hide the donor's.

Each of --repeat rounds runs the workload twice, which of the two goes
first alternating from round to round (load from elsewhere on the machine
then falls on both alike):

- quiet: nothing but the consumer on the donor port;
- flood: the flood of memagg/tests/functional/test_swapd_bounds.py
  (swapd_flood.py) from 127.0.0.2-127.0.0.8, started before fio and kept
  up until fio ends: 1,000 idle connections and 100 connections with a
  32 MiB WRITE header of an unknown grant, each set opened again once the
  donor has closed all of it (the WRITE headers' at read_timeout), and
  READ frames of random grants, 10,000 after 10,000. The flood runs in
  a process of its own at the lowest CPU priority: it stands for other
  hosts, and takes only the CPU that fio and the two memagg-swapd leave
  (run the benchmark under nice and it competes as their equal).

Before each phase the donor's threads are back to their quiet count.
Prints each round's figures, then the medians over the rounds of IOPS and
p50/p99 latency (submission to completion, fio's lat) per phase, the
flood/quiet ratios of p99 and IOPS, and for the flood phases the donor's
peak thread count against [swapd] max_connections, its RSS growth (peak
during any flood phase over before the first) and the most log lines it
wrote in one flood phase, each beside its target: p99 at most 2x quiet's,
threads at most max_connections plus a few of its own, RSS growth under
16 MiB, under 100 log lines. Then what the flood sent, and the export's
EXPORT_STATS (a warning if a read did not go to the donor). Exits non-zero
only when something failed to run, never on the figures.

Run: .venv/bin/python benchmarks/swapd_flood.py [--size-mb 512]
         [--runtime 10] [--repeat 5] [--local-dir DIR] [--seed 1] [--quick]
"""
import argparse
import collections
import os
import shutil
import statistics
import sys
import tempfile

from oslo_config import cfg

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _nbd_peers as peers  # noqa: E402
import swap_nbd_fio  # noqa: E402

from memagg.cmd import swapd as swapd_cmd  # noqa: E402
from memagg.conf import swapd as swapd_conf  # noqa: E402
from memagg.tests.functional import swapd_flood  # noqa: E402
from memagg.tests import polling  # noqa: E402

MIB = 1 << 20
SLAB_SIZE = swap_nbd_fio.SLAB_SIZE
NAME = swap_nbd_fio.SEALED
PHASES = ('quiet', 'flood')
SETTLE_TIMEOUT = 30
# The targets.
P99_RATIO = 2.0
RSS_GROWTH_MIB = 16
LOG_LINES = 100

#: One phase's figures: fio's (IOPS, p50 and p99 in us) and the donor's
#: (peak threads, peak RSS in KiB, lines it logged), the flood's counts
#: (None when quiet).
Phase = collections.namedtuple(
    'Phase', 'iops p50 p99 threads rss_kb log_lines counts')


def donor_options(config_file):
    """The [swapd] options of the donor's memagg.conf, read as
    memagg-swapd reads them."""
    conf = cfg.ConfigOpts()
    swapd_conf.register_opts(conf)
    conf(['--config-file', config_file], project='memagg')
    return swapd_cmd.options(conf)


def settle(sampler, threads):
    """Wait until the donor has no more than ``threads`` threads: the last
    flood's connections are gone."""
    try:
        polling.wait_for(lambda: sampler.status()[0] <= threads,
                         SETTLE_TIMEOUT, message='donor threads <= %d'
                         % threads)
    except AssertionError as exc:
        raise swap_nbd_fio.RunError(str(exc))


def _fio_read(server, args):
    """The workload once: fio's (IOPS, p50 us, p99 us)."""
    return swap_nbd_fio.cell(server, args, 'randread', 1)[:3]


def phase(server, args, donor, flooded):
    """One run of the workload, under the flood when ``flooded``; its
    Phase."""
    sampler = swapd_flood.Sampler(donor.pid)
    lines_before = swapd_flood.lines(donor.log)
    sampler.start()
    counts = None
    try:
        if flooded:
            flood = swapd_flood.Flood(donor.port)
            flood.start()
            try:
                iops, p50, p99 = _fio_read(server, args)
            finally:
                counts = flood.stop()
        else:
            iops, p50, p99 = _fio_read(server, args)
    except RuntimeError as exc:
        # The flood did not start, or a part of it failed.
        raise swap_nbd_fio.RunError(str(exc)) from exc
    finally:
        sampler.stopping.set()
        sampler.join()
    return Phase(iops, p50, p99, sampler.threads, sampler.rss_kb,
                 swapd_flood.lines(donor.log) - lines_before, counts)


def run(args):
    """Start the two memagg-swapd, prefill, run the rounds; (results,
    quiet threads, RSS in KiB before the first flood, donor options)."""
    server = peers.MemaggSwapdSealed(
        tempfile.mkdtemp(prefix='memagg-bench-flood-'), args.size, SLAB_SIZE,
        args.local_dir)
    try:
        server.start()
        donor = server.swapds['donor']
        options = donor_options(donor.config_file)
        print('donor port: [swapd] %s' % ', '.join(
            '%s %s' % (name, options[name])
            for name in ('max_connections', 'max_connections_per_peer',
                         'idle_timeout', 'read_timeout')), flush=True)
        swap_nbd_fio.fio(server, args, 'write', '1m', 8)
        # The consumer's connection and the donor's own threads.
        quiet_threads, rss_before = swapd_flood.Sampler(donor.pid).status()
        print('donor before the rounds: %d threads, RSS %.1f MiB'
              % (quiet_threads, rss_before / 1024), flush=True)
        results = {name: [] for name in PHASES}
        for r in range(args.repeat):
            for name in PHASES[r % 2:] + PHASES[:r % 2]:
                settle(swapd_flood.Sampler(donor.pid), quiet_threads)
                result = phase(server, args, donor, name == 'flood')
                results[name].append(result)
                print('round %d %s: IOPS %.0f, p50 %.1f us, p99 %.1f us; '
                      'donor peak %d threads, RSS %+.1f MiB, %d log lines'
                      % (r + 1, name, result.iops, result.p50, result.p99,
                         result.threads,
                         (result.rss_kb - rss_before) / 1024,
                         result.log_lines), flush=True)
        swap_nbd_fio.print_export_stats(NAME, server)
        return results, quiet_threads, rss_before, options
    except (peers.ServerError, swap_nbd_fio.RunError, OSError) as exc:
        raise swap_nbd_fio.RunError('%s%s' % (exc, server.log_tails()))
    finally:
        server.stop()
        shutil.rmtree(server.workdir, ignore_errors=True)


def verdict(met):
    """A target's word: met or missed."""
    return 'met' if met else 'missed'


def report(results, quiet_threads, rss_before, options):
    """Print the medians, the ratios and the donor's figures, each beside
    its target."""
    medians = {name: [statistics.median(getattr(r, field)
                                        for r in results[name])
                      for field in ('iops', 'p50', 'p99')]
               for name in PHASES}
    print('%-6s | %9s | %8s | %8s' % ('phase', 'IOPS', 'p50 us', 'p99 us'))
    for name in PHASES:
        print('%-6s | %9.0f | %8.1f | %8.1f' % (name, *medians[name]))
    p99_ratio = medians['flood'][2] / medians['quiet'][2]
    print('flood / quiet: p99 %.2fx (target <= %.2fx: %s), IOPS %.2fx'
          % (p99_ratio, P99_RATIO, verdict(p99_ratio <= P99_RATIO),
             medians['flood'][0] / medians['quiet'][0]))
    floods = results['flood']
    cap = options['max_connections']
    threads = max(r.threads for r in floods)
    most = cap + swapd_flood.THREADS_BESIDES
    print('donor threads under the flood: peak %d, %d quiet; [swapd] '
          'max_connections %d (target <= %d + %d = %d: %s)'
          % (threads, quiet_threads, cap, cap, swapd_flood.THREADS_BESIDES,
             most, verdict(threads <= most)))
    growth = (max(r.rss_kb for r in floods) - rss_before) / 1024
    print('donor RSS growth under the flood: %.1f MiB (target < %d MiB: %s)'
          % (growth, RSS_GROWTH_MIB, verdict(growth < RSS_GROWTH_MIB)))
    lines = max(r.log_lines for r in floods)
    print('donor log lines in one flood phase: at most %d (target < %d: %s)'
          % (lines, LOG_LINES, verdict(lines < LOG_LINES)))
    counts = collections.Counter()
    for r in floods:
        counts.update(r.counts)
    print('flood sent, all phases: %s' % ', '.join(
        '%s %d' % kv for kv in sorted(counts.items())))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--size-mb', type=int, default=512,
                        help='export size in MiB, a multiple of the 64 MiB '
                             'slab (default 512)')
    parser.add_argument('--runtime', type=float, default=10.0,
                        help='seconds of fio per phase (default 10)')
    parser.add_argument('--repeat', type=int, default=5,
                        help='rounds of a quiet and a flood phase, medians '
                             'reported (default 5)')
    parser.add_argument('--local-dir', default=tempfile.gettempdir(),
                        help="directory of the consumer's local durability "
                             'copy (default %(default)s)')
    parser.add_argument('--seed', type=int, default=1,
                        help="fio's random seed (default 1)")
    parser.add_argument('--quick', action='store_true',
                        help='a smoke run for CI: 64 MiB, 2 s per phase, '
                             'one round')
    args = parser.parse_args()
    if args.quick:
        args.size_mb, args.runtime, args.repeat = 64, 2.0, 1
    swap_nbd_fio.check_run_arguments(parser, args)
    if shutil.which('fio') is None:
        parser.error('fio not found: install it (tools/setup.sh does)')
    if not swapd_flood.raise_descriptor_limit():
        parser.error('the flood needs %d open files: raise the hard limit'
                     % swapd_flood.DESCRIPTORS)
    args.size = args.size_mb * MIB

    print('memagg-swapd donor quiet and under a flood (%d idle connections, '
          '%d 32 MiB WRITE headers, %d frames of random grants, from '
          '127.0.0.2-127.0.0.8): fio nbd engine, 4 KiB random reads at '
          'queue depth 1 on the consumer\'s export (%s: pages sealed, '
          'frames authenticated); %d MiB export prefilled with 1 MiB '
          'writes; %g s per phase, median of %d round(s); latency submit '
          'to completion; %d CPUs'
          % (swapd_flood.IDLE_CONNECTIONS, swapd_flood.WRITE_HEADERS,
             swapd_flood.RANDOM_FRAMES, NAME, args.size_mb, args.runtime,
             args.repeat, os.cpu_count()), flush=True)
    try:
        results, quiet_threads, rss_before, options = run(args)
    except swap_nbd_fio.RunError as exc:
        print('could not run: %s' % exc, file=sys.stderr)
        return 1
    report(results, quiet_threads, rss_before, options)
    return 0


if __name__ == '__main__':
    sys.exit(main())
