"""CPU per WSS estimate: memagg's native sampler against the classic wss
tool's method (clear_refs, wait, sum Referenced over smaps).

For each size a child process maps SIZE GiB and keeps a quarter of it hot
(memagg/tests/unit/native/hotset.py).  Per estimate:

- memagg: Sampler.begin(), wait the period, Sampler.collect().  CPU = this
  process's CPU in begin/collect + the kdamond thread's CPU over the
  period (collect() reports it from /proc/<kdamond pid>/schedstat).
- wss: write 1 to /proc/PID/clear_refs, wait the period, read
  /proc/PID/smaps and sum Referenced over the range.  CPU = this process's
  user + system time for both steps (the kernel's page-table walks are
  charged to it).

Run as root:  .venv/bin/python benchmarks/sampler_vs_clear_refs.py
              [--sizes 1 4 16] [--period 5] [--rounds 3] [--n 1000]
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

from memagg import _native

HOTSET = os.path.join(os.path.dirname(__file__), os.pardir, 'memagg',
                      'tests', 'unit', 'native', 'hotset.py')
GIB = 1 << 30


def wss_tool(pid, start, length, period):
    """The classic method; returns (fraction, cpu seconds)."""
    c0 = time.process_time()
    with open('/proc/%d/clear_refs' % pid, 'w') as f:
        f.write('1')
    c1 = time.process_time()
    time.sleep(period)
    c2 = time.process_time()
    referenced_kb = 0
    inside = False
    with open('/proc/%d/smaps' % pid) as f:
        for line in f:
            head = line.split(None, 1)[0]
            if '-' in head and not head.endswith(':'):
                lo, hi = (int(x, 16) for x in head.split('-'))
                inside = lo < start + length and hi > start
            elif inside and head == 'Referenced:':
                referenced_kb += int(line.split()[1])
    c3 = time.process_time()
    return referenced_kb * 1024 / length, (c1 - c0) + (c3 - c2)


def memagg_sampler(sampler, period):
    """One estimate; returns (fraction, cpu seconds, kdamond share)."""
    c0 = time.process_time()
    sampler.begin()
    c1 = time.process_time()
    time.sleep(period)
    c2 = time.process_time()
    result = sampler.collect()
    c3 = time.process_time()
    kdamond = max(result.get('kdamond_cpu_s', 0.0), 0.0)
    return result['fraction'], (c1 - c0) + (c3 - c2) + kdamond, kdamond


def run_size(gib, args):
    length = int(gib * GIB)
    proc = subprocess.Popen(
        [sys.executable, HOTSET, str(length >> 20), str(length >> 22)],
        stdout=subprocess.PIPE, text=True)
    try:
        start = int(proc.stdout.readline())
        truth = 0.25
        sampler = _native.Sampler(proc.pid, start, length, n=args.n,
                                  backend=args.backend,
                                  sample_interval=args.sample_interval)
        ours, theirs, kd = [], [], []
        try:
            # Warm-up: the first estimate also sets DAMON's sysfs tree up.
            memagg_sampler(sampler, min(args.period, 1.0))
            for _ in range(args.rounds):
                frac, cpu, kdamond = memagg_sampler(sampler,
                                                    args.period)
                ours.append((frac, cpu))
                kd.append(kdamond)
                theirs.append(wss_tool(proc.pid, start, length,
                                       args.period))
        finally:
            backend = sampler.backend
            sampler.close()
    finally:
        proc.kill()
        proc.wait()

    def summary(rows):
        cpu = statistics.mean(r[1] for r in rows)
        err = statistics.mean(abs(r[0] - truth) / truth * 100 for r in rows)
        worst = max(abs(r[0] - truth) / truth * 100 for r in rows)
        return cpu, err, worst

    m_cpu, m_err, m_worst = summary(ours)
    w_cpu, w_err, w_worst = summary(theirs)
    print('%5.0f GiB | %-11s %8.2f ms (kdamond %5.2f) err %4.1f %% '
          '(worst %4.1f) | wss %8.2f ms err %4.1f %% | ratio %5.1fx'
          % (gib, backend, m_cpu * 1e3, statistics.mean(kd) * 1e3, m_err,
             m_worst, w_cpu * 1e3, w_err, w_cpu / m_cpu if m_cpu else 0),
          flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--sizes', type=float, nargs='+', default=[1, 4, 16],
                        help='mapped sizes in GiB (default 1 4 16)')
    parser.add_argument('--period', type=float, default=5.0,
                        help='seconds per estimate (default 5)')
    parser.add_argument('--rounds', type=int, default=3,
                        help='estimates per size and method (default 3)')
    parser.add_argument('--n', type=int, default=1000,
                        help='pages sampled by memagg (default 1000)')
    parser.add_argument('--sample-interval', type=float, default=2.5,
                        help="DAMON's accessed-bit check interval, s "
                             '(default 2.5)')
    parser.add_argument('--backend', default='auto',
                        help='memagg sampler backend (default auto)')
    args = parser.parse_args()
    if os.geteuid() != 0:
        parser.error('needs root: PFNs in pagemap, clear_refs and DAMON')
    print('per estimate, period %.1f s, a quarter of the mapping hot, '
          'memagg n=%d; CPU = process + kernel threads; err vs truth '
          '(mean of %d)' % (args.period, args.n, args.rounds))
    for gib in args.sizes:
        run_size(gib, args)


if __name__ == '__main__':
    main()
