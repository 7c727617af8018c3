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

"""Remote swap through NBD: memagg-swapd against nbdkit and qemu-nbd, 4 KiB
random read and write with fio's nbd engine at queue depth 1 and 32.

The servers, all up for the whole run, each on a free port or a fresh
socket:

- memagg: a donor memagg-swapd and a consumer memagg-swapd, loopback TCP
  between them; the grant made over their control sockets (GRANT_ALLOC on
  the donor, EXPORT_CREATE on the consumer); fio on the consumer's export
  socket; the pages in clear.  The consumer keeps its local durability
  copy in --local-dir: by default the temporary directory, on disk like
  swapd's state directory in production; /dev/shm leaves the filesystem's
  cost out.
- memagg-sealed: the same with EXPORT_CREATE seal=1, memagg-compute's
  default: each page encrypted and authenticated by the consumer
  (AEGIS-256X2, or AES-256-GCM on a CPU without AES instructions), so the
  donor and the network see ciphertext only.
- nbdkit: its memory plugin over TCP.
- qemu-nbd: a raw file on /dev/shm over TCP, its default cache mode.
- nbdkit-relay, a reference rather than a peer: memagg's hops with nbdkit
  at both ends (fio on a unix socket to nbdkit's nbd plugin, which
  forwards over loopback TCP to nbdkit's memory plugin), for what the
  extra hop costs a mature server.

Each server's export is first prefilled whole with 1 MiB sequential
writes (memagg reads a never-written page as zeros with no network trip and
nbdkit's sparse array has nothing to read there either, so without it the
reads would not be comparable).  Then each cell runs --repeat times per
server, the servers in a rotated order each time (load from elsewhere on
the machine falls on all alike), each run a time-based fio run of
--runtime seconds with the same seed (the same offsets for every server).
Medians over the repeats of:

- IOPS and latency p50/p99 from submission to completion (fio's lat, not
  clat: the nbd engine sends the request while submitting, so at queue
  depth 1 clat leaves out about half of each request's time);
- CPU per GiB (over all the repeats): utime + stime of every server
  process (both swapds for memagg and memagg-sealed) from /proc/PID/stat,
  before and after each run, over the bytes moved.  fio's own CPU is not
  counted.

Prints a table with the ratios, for IOPS and p99: memagg-sealed / memagg
(what sealing costs), memagg / strongest peer (the peer, nbdkit or
qemu-nbd, with the most IOPS in that cell) and memagg / nbdkit-relay.
Then a verdict line per target: sealing costs at most 10 % of memagg's
IOPS at queue depth 32 and adds at most 10 % to its p99 in every cell
(issue 18); memagg has at least the strongest peer's IOPS and no worse
p99.  Exits non-zero only when something failed to run, never on the
figures.

Run: .venv/bin/python benchmarks/swap_nbd_fio.py [--size-mb 512]
         [--runtime 5] [--repeat 3] [--servers memagg memagg-sealed
         nbdkit qemu-nbd nbdkit-relay]
         [--local-dir DIR] [--seed 1] [--quick]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _nbd_peers as peers  # noqa: E402
import _gauges  # noqa: E402

MIB = 1 << 20
GIB = 1 << 30
SLAB_SIZE = 64 * MIB
SERVERS = ('memagg', 'memagg-sealed', 'memagg-fabric', 'nbdkit', 'qemu-nbd',
           'nbdkit-relay')
SEALED = 'memagg-sealed'
FABRIC = 'memagg-fabric'
MEMAGG = ('memagg', SEALED, FABRIC)     # memagg-swapd, with EXPORT_STATS
#: memagg's variants, each compared with memagg: (name, its floor on
#: memagg's IOPS at queue depth 32, its ceiling on memagg's p99 or None).
VARIANTS = ((SEALED, 0.90, 1.10),      # issue 18
            (FABRIC, 0.90, None))      # issue 37: the fabric layer's cost
PEERS = ('nbdkit', 'qemu-nbd')         # what the target compares with
RELAY = 'nbdkit-relay'
CELLS = [('randread', 1), ('randread', 32), ('randwrite', 1),
         ('randwrite', 32)]


class RunError(Exception):
    """fio or a server failed: the benchmark could not run."""


def fio(server, args, rw, bs, qd, runtime_ms=None):
    """One fio run on the nbd engine against the server; fio's JSON job."""
    # The nbd engine prints to stdout too: the JSON goes to a file.
    out = os.path.join(server.workdir, 'fio-%s-qd%d.json' % (rw, qd))
    argv = ['fio', '--name=%s-qd%d' % (rw, qd), '--ioengine=nbd',
            '--uri=' + server.uri, '--rw=' + rw, '--bs=' + bs,
            '--iodepth=%d' % qd, '--size=%d' % args.size,
            '--randseed=%d' % args.seed, '--lat_percentiles=1',
            '--percentile_list=50:99',
            '--output-format=json', '--output=' + out]
    if runtime_ms:
        argv += ['--time_based', '--runtime=%dms' % runtime_ms]
    timeout = (runtime_ms or 0) / 1000 + 300
    what = 'fio %s qd %d' % (rw, qd)
    try:
        done = subprocess.run(argv, capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise RunError('%s did not finish within %.0f s' % (what, timeout))
    if done.returncode:
        raise RunError('%s exited with %d: %s' % (
            what, done.returncode, done.stderr.strip()[-2000:]))
    try:
        with open(out) as f:
            job = json.load(f)['jobs'][0]
    except (OSError, ValueError, KeyError, IndexError) as exc:
        raise RunError('%s: no JSON result in %s (%s)' % (what, out, exc))
    if job['error']:
        raise RunError('%s: job error %d' % (what, job['error']))
    return job


def cell(server, args, rw, qd):
    """Run one cell once; (iops, p50 us, p99 us, bytes, CPU s per process
    in the order of server.pids)."""
    before = [_gauges.cpu_seconds(pid) for pid in server.pids]
    job = fio(server, args, rw, '4k', qd, int(args.runtime * 1000))
    after = [_gauges.cpu_seconds(pid) for pid in server.pids]
    side = job['read' if rw == 'randread' else 'write']
    if not side['io_bytes']:
        raise RunError('fio %s qd %d moved no data' % (rw, qd))
    pct = side['lat_ns']['percentile']
    return (side['iops'], pct['50.000000'] / 1e3, pct['99.000000'] / 1e3,
            side['io_bytes'], [a - b for a, b in zip(after, before)])


def summarise(runs):
    """Median IOPS, p50 and p99 over the repeats; CPU s per GiB over all
    of them, in total and per process."""
    gib = sum(r[3] for r in runs) / GIB
    per_process = [sum(cpu) / gib for cpu in zip(*(r[4] for r in runs))]
    return (statistics.median(r[0] for r in runs),
            statistics.median(r[1] for r in runs),
            statistics.median(r[2] for r in runs),
            sum(per_process), per_process)


def print_export_stats(name, server):
    """Print a memagg server's EXPORT_STATS, and a warning when not every
    request went through the donor (then the figures are not those of the
    remote path)."""
    stats = server.stats()
    print('%s export after the run: %s' % (name, ' '.join(
        '%s=%s' % kv for kv in sorted(stats.items()))), flush=True)
    off_path = [k for k in ('zero_reads', 'local_reads', 'remote_errors',
                            'degraded_slabs', 'auth_failures')
                if stats.get(k, 0)]
    if off_path:
        print('WARNING: not every %s request went through the donor (%s): '
              'its figures are not those of the remote path'
              % (name, ', '.join(off_path)), flush=True)


def check_run_arguments(parser, args):
    """Refuse, naming the option, an export size that is not whole slabs
    and a runtime or repeat count that is not positive (this benchmark's
    and swapd_flood.py's)."""
    if args.size_mb <= 0 or args.size_mb * MIB % SLAB_SIZE:
        parser.error('--size-mb: must be a positive multiple of 64 (the '
                     'slab size), got %d' % args.size_mb)
    if args.runtime <= 0:
        parser.error('--runtime: must be positive, got %g' % args.runtime)
    if args.repeat <= 0:
        parser.error('--repeat: must be positive, got %d' % args.repeat)


def make_server(name, workdir, args):
    if name in MEMAGG:
        kind = {SEALED: peers.MemaggSwapdSealed,
                FABRIC: peers.MemaggSwapdFabric}.get(name, peers.MemaggSwapd)
        return kind(workdir, args.size, SLAB_SIZE, args.local_dir)
    if name == 'nbdkit':
        return peers.NbdkitMemory(workdir, args.size)
    if name == RELAY:
        return peers.NbdkitRelay(workdir, args.size)
    return peers.QemuNbdTmpfs(workdir, args.size)


def run(names, args):
    """Start the servers, prefill each, run the cells; (results, failures).

    Every server is up for the whole run, idle but for its own cells, and
    each repeat of a cell visits the servers in a rotated order: load from
    elsewhere on the machine then falls on all of them alike, not on
    whichever ran last.  A server that fails is reported and left out of
    the later cells; the others go on.
    """
    servers, failures = {}, {}

    def fail(name, exc):
        server = servers.pop(name)
        server.stop()
        failures[name] = '%s: %s%s' % (name, exc, server.log_tails())
        shutil.rmtree(server.workdir, ignore_errors=True)
        print('FAILED %s' % failures[name], file=sys.stderr, flush=True)

    try:
        for name in names:
            servers[name] = make_server(
                name, tempfile.mkdtemp(prefix='memagg-bench-%s-' % name),
                args)
            try:
                servers[name].start()
                fio(servers[name], args, 'write', '1m', 8)
            except (peers.ServerError, OSError) as exc:
                fail(name, exc)
        runs = {name: {key: [] for key in CELLS} for name in servers}
        for key in CELLS:
            for r in range(args.repeat):
                order = list(servers)
                for name in order[r % len(order):] + order[:r % len(order)]:
                    try:
                        runs[name][key].append(
                            cell(servers[name], args, *key))
                    except (RunError, OSError) as exc:
                        fail(name, exc)
        for name in [n for n in MEMAGG if n in servers]:
            try:
                print_export_stats(name, servers[name])
            except (peers.ServerError, OSError) as exc:
                fail(name, exc)
    finally:
        for server in servers.values():
            server.stop()
            shutil.rmtree(server.workdir, ignore_errors=True)
    results = {name: {key: summarise(runs[name][key]) for key in CELLS}
               for name in servers}
    return results, failures


def strongest_peer(results, key):
    peers_here = [(results[n][key][0], n) for n in results if n in PEERS]
    return max(peers_here)[1] if peers_here else None


def print_table(results, names):
    width = 32
    head = '%-9s %3s' % ('workload', 'qd')
    sub = '%13s' % ''
    for n in names:
        head += ' | %-*s' % (width, n)
        sub += ' | %8s %6s %6s %9s' % ('IOPS', 'p50 us', 'p99 us',
                                       'cpu s/GiB')
    variants = [v for v, _, _ in VARIANTS
                if 'memagg' in names and v in names]
    compare = 'memagg' in names and any(n in PEERS for n in names)
    relay = 'memagg' in names and RELAY in names
    for variant in variants:
        head += ' | %s / memagg' % variant
        sub += ' | %5s %5s' % ('IOPS', 'p99')
    if compare:
        head += ' | memagg / strongest peer'
        sub += ' | %-8s %5s %5s' % ('peer', 'IOPS', 'p99')
    if relay:
        head += ' | memagg / %s' % RELAY
        sub += ' | %5s %5s' % ('IOPS', 'p99')
    print(head)
    print(sub)
    for key in CELLS:
        line = '%-9s %3d' % key
        for n in names:
            iops, p50, p99, cpu, _ = results[n][key]
            line += ' | %8.0f %6.1f %6.1f %9.2f' % (iops, p50, p99, cpu)
        for variant in variants:
            line += ' | %4.2fx %4.2fx' % (
                results[variant][key][0] / results['memagg'][key][0],
                results[variant][key][2] / results['memagg'][key][2])
        if compare:
            peer = strongest_peer(results, key)
            line += ' | %-8s %4.2fx %4.2fx' % (
                peer, results['memagg'][key][0] / results[peer][key][0],
                results['memagg'][key][2] / results[peer][key][2])
        if relay:
            line += ' | %4.2fx %4.2fx' % (
                results['memagg'][key][0] / results[RELAY][key][0],
                results['memagg'][key][2] / results[RELAY][key][2])
        print(line)


def peer_misses(results):
    """The cells where memagg has fewer IOPS or a higher p99 than the
    strongest peer, each as text."""
    misses = []
    for key in CELLS:
        peer = strongest_peer(results, key)
        m_iops, _, m_p99, _, _ = results['memagg'][key]
        p_iops, _, p_p99, _, _ = results[peer][key]
        why = []
        if m_iops < p_iops:
            why.append('IOPS %.2fx' % (m_iops / p_iops))
        if m_p99 > p_p99:
            why.append('p99 %.2fx' % (m_p99 / p_p99))
        if why:
            misses.append('%s qd%d vs %s: %s'
                          % (key[0], key[1], peer, ', '.join(why)))
    return misses


def variant_misses(results, variant, iops_floor, p99_ceiling):
    """The cells where ``variant`` has less than ``iops_floor`` times
    memagg's IOPS (queue depth 32 only) or, with a ``p99_ceiling``, a p99
    more than that many times memagg's, each as text."""
    misses = []
    for key in CELLS:
        s_iops, _, s_p99, _, _ = results[variant][key]
        m_iops, _, m_p99, _, _ = results['memagg'][key]
        why = []
        if key[1] == 32 and s_iops < iops_floor * m_iops:
            why.append('IOPS %.2fx' % (s_iops / m_iops))
        if p99_ceiling is not None and s_p99 > p99_ceiling * m_p99:
            why.append('p99 %.2fx' % (s_p99 / m_p99))
        if why:
            misses.append('%s qd%d: %s' % (key[0], key[1], ', '.join(why)))
    return misses


def verdict(target, misses):
    """One line: the target met or not, and where not."""
    if not misses:
        return 'verdict: %s met in all %d cells' % (target, len(CELLS))
    return 'verdict: %s met in %d of %d cells; missed: %s' % (
        target, len(CELLS) - len(misses), len(CELLS), '; '.join(misses))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--size-mb', type=int, default=512,
                        help='export size in MiB, a multiple of the 64 MiB '
                             'slab (default 512)')
    parser.add_argument('--runtime', type=float, default=5.0,
                        help='seconds per fio run (default 5)')
    parser.add_argument('--servers', nargs='+', choices=SERVERS,
                        default=list(SERVERS),
                        help='servers to run (default all)')
    parser.add_argument('--local-dir', default=tempfile.gettempdir(),
                        help="directory of memagg's local durability copy "
                             '(default %(default)s; /dev/shm for tmpfs)')
    parser.add_argument('--repeat', type=int, default=3,
                        help='runs of each cell per server, medians '
                             'reported (default 3)')
    parser.add_argument('--seed', type=int, default=1,
                        help="fio's random seed (default 1)")
    parser.add_argument('--quick', action='store_true',
                        help='a smoke run for CI: 64 MiB, 1 s per run, once')
    args = parser.parse_args()
    if args.quick:
        args.size_mb, args.runtime, args.repeat = 64, 1.0, 1
    check_run_arguments(parser, args)
    for tool in ('fio', 'nbdkit', 'qemu-nbd'):
        if shutil.which(tool) is None:
            parser.error('%s not found: install it (tools/setup.sh does)'
                         % tool)
    args.size = args.size_mb * MIB
    names = [n for n in SERVERS if n in args.servers]

    print('4 KiB random I/O through NBD, fio nbd engine; %d MiB export '
          'prefilled with 1 MiB writes; %g s per run, median of %d run(s); '
          'latency submit to completion; %d CPUs; CPU = server processes '
          'only (memagg*: donor + consumer swapd); '
          "memagg's local copy in %s"
          % (args.size_mb, args.runtime, args.repeat, os.cpu_count(),
             args.local_dir), flush=True)
    results, failures = run(names, args)
    ran = [n for n in names if n in results]
    if ran:
        print_table(results, ran)
    for name in [n for n in MEMAGG if n in results]:
        print('%s cpu s/GiB, donor + consumer: %s' % (name, ', '.join(
            '%s qd%d %.2f + %.2f' % (key + tuple(results[name][key][4]))
            for key in CELLS)))
    for variant, floor, ceiling in VARIANTS:
        if 'memagg' in results and variant in results:
            print(verdict('%s target (>= %.2fx memagg\'s IOPS at qd 32%s)'
                          % (variant, floor, ', <= %.2fx its p99' % ceiling
                             if ceiling else ''),
                          variant_misses(results, variant, floor, ceiling)))
    if 'memagg' in results and any(n in PEERS for n in results):
        print(verdict("target (>= strongest peer's IOPS, <= its p99)",
                      peer_misses(results)))
    if failures:
        print('could not run: %s' % ', '.join(failures), file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
