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

"""Benchmark: memagg-sim sweep of 24 settings over three synthetic weeks of
100 hosts.

Runs the installed ``memagg-sim sweep`` console script, as an operator
would: the synthetic week (100 hosts of 32 cores and 128 GiB, 1,000 VMs,
7 days at 5-minute steps), seeds 0, 1 and 2, and the grid of
``doc/source/admin/sim.rst`` (placement cpu_threshold 0.5 to 0.8 x
underload cpu threshold 0.3 to 0.5 x history_length 30 and 100: 24
settings), with the defaults otherwise (the storm controls, and remote
memory). 24 x 3 simulations and the booked reference of each seed: 75
weeks. The target is under 10 minutes of wall time on 2 cores.

Prints the wall time of the whole command against the target, the
simulations per minute, and the settings on the Pareto front.

No peer applies: no other tool sweeps memagg's consolidation plug-ins.

Run: .venv/bin/python benchmarks/sim_sweep.py [--workers N]
"""
import argparse
import csv
import os
import subprocess
import sys
import tempfile
import time

TARGET_S = 600.0
SEEDS = '0,1,2'
GRID = [
    'placement_params=' + ','.join(
        '{"cpu_threshold": %s}' % t for t in ('0.5', '0.6', '0.7', '0.8')),
    'underload_cpu_params=' + ','.join(
        '{"threshold": %s}' % t for t in ('0.3', '0.4', '0.5')),
    'history_length=30,100',
]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--workers', type=int, default=None,
                        help="memagg-sim sweep's --workers (default: its "
                             "own, one per core).")
    args = parser.parse_args()

    script = os.path.join(os.path.dirname(sys.executable), 'memagg-sim')
    with tempfile.TemporaryDirectory(prefix='sim-sweep-') as out:
        command = [script, 'sweep', '--hosts', '100', '--seeds', SEEDS,
                   '--output-dir', out, '--quiet']
        for option in GRID:
            command += ['--set', option]
        if args.workers:
            command += ['--workers', str(args.workers)]
        started = time.perf_counter()
        subprocess.run(command, check=True, stdin=subprocess.DEVNULL)
        wall = time.perf_counter() - started
        with open(os.path.join(out, 'sweep.csv'), newline='') as stream:
            rows = list(csv.DictReader(stream))

    seeds = len(SEEDS.split(','))
    simulations = len(rows) * seeds + seeds
    print('memagg-sim sweep, synthetic 100 hosts x 7 days, seeds %s: %d '
          'settings x %d seeds and the booked reference per seed, %d '
          'simulations, %s workers'
          % (SEEDS, len(rows), seeds, simulations,
             args.workers or os.cpu_count()))
    print('wall time: %.1f s (target < %.0f s: %s), %.1f simulations a '
          'minute' % (wall, TARGET_S, 'met' if wall < TARGET_S else 'missed',
                      60 * simulations / wall))
    front = [row for row in rows if row['pareto'] == 'yes']
    print('Pareto front: settings %s'
          % ', '.join(row['setting'] for row in front))
    print('peer: none applies (no other tool sweeps these plug-ins)')


if __name__ == '__main__':
    main()
