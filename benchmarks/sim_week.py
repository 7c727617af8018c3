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

"""Benchmark: memagg-sim on a synthetic week of 1,000 hosts, with the storm
controls and the reservoir model and without them.

Runs the installed ``memagg-sim`` console script, as an operator would, on
its built-in synthetic trace: 1,000 hosts (32 cores, 128 GiB), 10,000 VMs,
7 days at 5-minute steps (2,016 steps), both memory bases (booked and
wss), the default [consolidation] algorithms (cpu overload: mhod), a round
every step, plots written. Twice, one run after the other:

* ``with``: the defaults, so the storm controls of issue 15 (hysteresis,
  the peaks of a day, the cool-down and the caps) and the reservoir model
  (remote memory, on by default);
* ``without``: those controls off (WITHOUT: no headroom, the latest
  sample, no cool-down, no caps) and no remote memory
  (``--max-remote-ratio 0``).

The targets: the ``with`` run within 35 s of wall time (2 cores), and
within 1.5 times the ``without`` run's; in it, the wss basis' loop within
1.5 times the booked basis'.

Prints, per run, the wall time of the whole command, each basis' loop
time and the ratio of the wss basis' to the booked basis', active hosts
and migrations from its summary.json, the stepped throughput (hosts x
steps x bases per second of wall time) and the share of hosts that
packing by working set saves over packing by booked memory; then the
ratio of the two wall times.

No peer applies: no other simulator replays memagg's consolidation
plug-ins, so instead of a speed ratio against one it prints the throughput
and the wss-vs-booked ratio, and says so.

Run: .venv/bin/python benchmarks/sim_week.py [--hosts 1000] [--days 7]
         [--step 300] [--jobs N] [memagg-sim synthetic options...]
e.g. ``--cpu-mean 0.3`` for a cpu-bound cloud (given to both runs).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

TARGET_S = 35.0
TARGET_RATIO = 1.5
#: The wss basis' loop time over the booked basis', at most.
TARGET_BASES = 1.5

#: memagg-sim options that turn the storm controls and remote memory off.
WITHOUT = ['--fill-headroom-cpu', '0', '--fill-headroom-mem', '0',
           '--fill-window', '1', '--migration-cooldown', '0',
           '--max-migrations-per-round', '0',
           '--max-migrations-per-host-hour', '0', '--max-remote-ratio', '0']


def simulate(args, extra):
    """Run memagg-sim with ``extra`` options; its wall time and
    summary."""
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
            return wall, json.load(stream)


def show(name, wall, summary):
    """Print one run's figures."""
    bases = summary['bases']
    trace = summary['trace']
    host_steps = trace['hosts'] * trace['steps'] * len(bases)
    print('%s: wall time %.1f s' % (name, wall))
    for basis, s in sorted(bases.items()):
        remote = s.get('remote')
        print('  %-6s loop %.1f s, active hosts mean %.1f (min %d, max %d), '
              'migrations %d, memory overload %.4f%%, cpu overload %.4f%% '
              'of host time%s'
              % (basis, s['wall_time_s'], s['active_hosts']['mean'],
                 s['active_hosts']['min'], s['active_hosts']['max'],
                 s['migrations']['total'],
                 100 * s['memory_overload']['fraction'],
                 100 * s['cpu_overload']['fraction'],
                 '' if remote is None else
                 ', VMs partly remote %.4f%% of VM time, %d grants'
                 % (100 * remote['partly_remote']['vm_fraction'],
                    remote['grants']['made'])))
    if 'booked' in bases and 'wss' in bases:
        booked, wss = (bases[basis]['wall_time_s']
                       for basis in ('booked', 'wss'))
        ratio = wss / booked if booked else float('inf')
        print('  loop wss / booked: %.1f s / %.1f s = %.2fx (target <= '
              '%.1fx: %s)' % (wss, booked, ratio, TARGET_BASES,
                              'met' if ratio <= TARGET_BASES else 'missed'))
    print('  throughput: %.0f host-steps/s (%d hosts x %d steps x %d bases '
          '/ wall time)' % (host_steps / wall, trace['hosts'],
                            trace['steps'], len(bases)))
    print('  hosts saved by wss packing vs booked packing: %.1f %% (mean '
          'active hosts %.1f vs %.1f)'
          % (100 * summary['comparison']['hosts_saved_ratio'],
             summary['comparison']['active_hosts_mean_wss'],
             summary['comparison']['active_hosts_mean_booked']))


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

    runs = {}
    for name, options in (('with', extra), ('without', extra + WITHOUT)):
        runs[name] = simulate(args, options)
    trace = runs['with'][1]['trace']
    print('memagg-sim, synthetic %d hosts x %g days at %g s steps (%d '
          'steps), %d VMs, bases %s%s'
          % (trace['hosts'], args.days, trace['step_s'], trace['steps'],
             trace['vms'], ' and '.join(sorted(runs['with'][1]['bases'])),
             (' ' + ' '.join(extra)) if extra else ''))
    show('with the storm controls and remote memory (the defaults)',
         *runs['with'])
    show('without them (%s)' % ' '.join(WITHOUT), *runs['without'])
    wall, without = runs['with'][0], runs['without'][0]
    print('wall time with them: %.1f s (target <= %.0f s: %s)'
          % (wall, TARGET_S, 'met' if wall <= TARGET_S else 'missed'))
    ratio = wall / without
    print('with / without: %.1f s / %.1f s = %.2fx (target <= %.1fx: %s)'
          % (wall, without, ratio, TARGET_RATIO,
             'met' if ratio <= TARGET_RATIO else 'missed'))
    print('peer: none applies (no other simulator replays these plug-ins); '
          'the throughput and the wss-vs-booked ratio stand in for the '
          'comparison')


if __name__ == '__main__':
    main()
