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

"""Benchmark: memagg-sim on a synthetic week of 1,000 hosts.

Runs the installed ``memagg-sim`` console script, as an operator would, on
its built-in synthetic trace: 1,000 hosts (32 cores, 128 GiB), 10,000 VMs,
7 days at 5-minute steps (2,016 steps), both memory bases (booked and
wss), the default [consolidation] algorithms (cpu overload: mhod), a round
every step, plots written. The target is under 2 minutes of wall time.

Prints the wall time of the whole command, each basis' loop time, active
hosts and migrations from its summary.json, the stepped throughput
(hosts x steps x bases per second of wall time) and the share of hosts
that packing by working set saves over packing by booked memory.

No peer applies: no other simulator replays memagg's consolidation
plug-ins, so instead of a speed ratio against one it prints the throughput
and the wss-vs-booked ratio, and says so.

Run: .venv/bin/python benchmarks/sim_week.py [--hosts 1000] [--days 7]
         [--step 300] [--jobs N] [memagg-sim synthetic options...]
e.g. ``--cpu-mean 0.3`` for a cpu-bound cloud.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

TARGET_S = 120.0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--hosts', type=int, default=1000,
                        help='Hosts (default 1000).')
    parser.add_argument('--days', type=float, default=7.0,
                        help='Days of trace (default 7).')
    parser.add_argument('--step', type=float, default=300.0,
                        help='Seconds per step (default 300).')
    parser.add_argument('--jobs', type=int, default=None,
                        help="memagg-sim's --jobs (default: its own).")
    args, extra = parser.parse_known_args()

    script = os.path.join(os.path.dirname(sys.executable), 'memagg-sim')
    with tempfile.TemporaryDirectory(prefix='sim-week-') as out:
        command = [script, '--hosts', str(args.hosts), '--days',
                   str(args.days), '--step', str(args.step),
                   '--output-dir', out, '--quiet'] + extra
        if args.jobs:
            command += ['--jobs', str(args.jobs)]
        started = time.perf_counter()
        subprocess.run(command, check=True, stdin=subprocess.DEVNULL)
        wall = time.perf_counter() - started
        with open(os.path.join(out, 'summary.json')) as stream:
            summary = json.load(stream)

    trace = summary['trace']
    bases = summary['bases']
    host_steps = trace['hosts'] * trace['steps'] * len(bases)
    print('memagg-sim, synthetic %d hosts x %g days at %g s steps (%d '
          'steps), %d VMs, bases %s%s'
          % (trace['hosts'], args.days, trace['step_s'], trace['steps'],
             trace['vms'], ' and '.join(sorted(bases)),
             (' ' + ' '.join(extra)) if extra else ''))
    print('wall time: %.1f s (target < %.0f s: %s)'
          % (wall, TARGET_S, 'met' if wall < TARGET_S else 'missed'))
    for basis, s in sorted(bases.items()):
        print('  %-6s loop %.1f s, active hosts mean %.1f (min %d, max %d), '
              'migrations %d, memory overload %.4f%%, cpu overload %.4f%% '
              'of host time'
              % (basis, s['wall_time_s'], s['active_hosts']['mean'],
                 s['active_hosts']['min'], s['active_hosts']['max'],
                 s['migrations']['total'],
                 100 * s['memory_overload']['fraction'],
                 100 * s['cpu_overload']['fraction']))
    print('throughput: %.0f host-steps/s (%d hosts x %d steps x %d bases / '
          'wall time)' % (host_steps / wall, trace['hosts'], trace['steps'],
                          len(bases)))
    print('hosts saved by wss packing vs booked packing: %.1f %% (mean '
          'active hosts %.1f vs %.1f)'
          % (100 * summary['comparison']['hosts_saved_ratio'],
             summary['comparison']['active_hosts_mean_wss'],
             summary['comparison']['active_hosts_mean_booked']))
    print('peer: none applies (no other simulator replays these plug-ins); '
          'the throughput and the wss-vs-booked ratio stand in for the '
          'comparison')


if __name__ == '__main__':
    main()
