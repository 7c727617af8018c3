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

"""CPU per WSS estimate: memagg's native sampler against the classic wss
tool's method (clear_refs, wait, sum Referenced over smaps).

For each size a child process maps SIZE GiB and keeps a quarter of it hot
(memagg/tests/unit/native/hotset.py), in 64 KiB chunks scattered at random
over the mapping: a contiguous hot set would line up with the sampler's
strata and hide its statistical error.  Per estimate:

- memagg: Sampler.begin(), wait the period, Sampler.collect(), with the
  sampler's defaults (the DAMON sampling interval paced from the period, as
  memagg-compute runs it; one warm-up period first, as in its steady
  state).  CPU = this process's CPU (all threads) from begin() to the end
  of collect() + the kdamond thread's whole life (collect() reports it from
  /proc/<kdamond pid>/schedstat; the kdamond is started by begin()).
- wss: write 1 to /proc/PID/clear_refs, wait the period, read
  /proc/PID/smaps and sum Referenced over the range.  CPU = this process's
  CPU over the same span (the kernel's page-table walks are charged to it).

Error = |fraction - 0.25| / 0.25, mean (and worst) over the rounds.

Run as root:  .venv/bin/python benchmarks/sampler_vs_clear_refs.py
              [--sizes 1 4 16] [--period 5] [--rounds 3] [--n 1000 2000]
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
    time.sleep(period)
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
    c1 = time.process_time()
    return referenced_kb * 1024 / length, c1 - c0


def memagg_sampler(sampler, period):
    """One estimate; returns (fraction, cpu seconds, kdamond share)."""
    c0 = time.process_time()
    sampler.begin()
    time.sleep(period)
    result = sampler.collect()
    c1 = time.process_time()
    kdamond = max(result.get('kdamond_cpu_s', 0.0), 0.0)
    return result['fraction'], c1 - c0 + kdamond, kdamond


def run_size(gib, args):
    length = int(gib * GIB)
    proc = subprocess.Popen(
        [sys.executable, HOTSET, str(length >> 20), str(length >> 22),
         '--scatter', str(args.seed)],
        stdout=subprocess.PIPE, text=True)
    try:
        start = int(proc.stdout.readline())
        truth = 0.25
        samplers = [_native.Sampler(proc.pid, start, length, n=n,
                                    backend=args.backend,
                                    sample_interval=args.sample_interval)
                    for n in args.n]
        ours = [[] for _ in samplers]
        kd = [[] for _ in samplers]
        theirs = []
        try:
            for sampler in samplers:
                memagg_sampler(sampler, args.period)
            for _ in range(args.rounds):
                for k, sampler in enumerate(samplers):
                    frac, cpu, kdamond = memagg_sampler(sampler, args.period)
                    ours[k].append((frac, cpu))
                    kd[k].append(kdamond)
                theirs.append(wss_tool(proc.pid, start, length, args.period))
        finally:
            backend = samplers[0].backend
            for sampler in samplers:
                sampler.close()
    finally:
        proc.kill()
        proc.wait()

    def summary(rows):
        cpu = statistics.mean(r[1] for r in rows)
        err = statistics.mean(abs(r[0] - truth) / truth * 100 for r in rows)
        worst = max(abs(r[0] - truth) / truth * 100 for r in rows)
        return cpu, err, worst

    w_cpu, w_err, w_worst = summary(theirs)
    for k, n in enumerate(args.n):
        m_cpu, m_err, m_worst = summary(ours[k])
        print('%5.0f GiB | %-11s n=%-5d %6.2f ms (kdamond %5.2f) err %4.1f %% '
              '(worst %4.1f) | wss %7.2f ms err %4.1f %% | ratio %5.1fx'
              % (gib, backend, n, m_cpu * 1e3,
                 statistics.mean(kd[k]) * 1e3, m_err, m_worst,
                 w_cpu * 1e3, w_err, w_cpu / m_cpu if m_cpu else 0),
              flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--sizes', type=float, nargs='+', default=[1, 4, 16],
                        help='mapped sizes in GiB (default 1 4 16)')
    parser.add_argument('--period', type=float, default=5.0,
                        help='seconds per estimate (default 5)')
    parser.add_argument('--rounds', type=int, default=3,
                        help='estimates per size and method (default 3)')
    parser.add_argument('--n', type=int, nargs='+', default=[1000, 2000],
                        help='pages sampled by memagg, one sampler each '
                             '(default 1000, the spec default, and 2000)')
    parser.add_argument('--sample-interval', type=float, default=None,
                        help="DAMON's accessed-bit check interval, s "
                             "(default: the sampler's own, from the period)")
    parser.add_argument('--seed', type=int, default=1,
                        help='seed of the scattered hot set (default 1)')
    parser.add_argument('--backend', default='auto',
                        help='memagg sampler backend (default auto)')
    args = parser.parse_args()
    if os.geteuid() != 0:
        parser.error('needs root: PFNs in pagemap, clear_refs and DAMON')
    print('per estimate, period %.1f s, a quarter of the mapping hot '
          '(scattered 64 KiB chunks); '
          'CPU = process + kernel threads; err vs truth (mean of %d)'
          % (args.period, args.rounds))
    for gib in args.sizes:
        run_size(gib, args)


if __name__ == '__main__':
    main()
