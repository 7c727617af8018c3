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

"""memagg-sim's results pinned: the summaries of four short runs (the
defaults; a cloud whose working sets rise together, where the reservoir
lends, with the fixed and the tlp budget; a fill window shorter than the
history) and of an excerpt of each public trace format memagg-sim import
reads (a made-up fleet of 40 VMs over two days, import_fixtures.fleet),
with the shipped defaults (pinned_summaries.json, rewritten when the
consolidation defaults changed: the sum of the VMs' peaks over a two-day
fill window, cpu overload by threshold). A speed-up must leave every
figure as it was; wall times are left out.

To write the file again after a change meant to move the figures:
MEMAGG_WRITE_PINNED=1 pytest memagg/tests/unit/sim/test_pinned.py."""
import json
import os
import subprocess
import sys

import pytest

from memagg.cmd import sim as sim_cmd
from memagg.sim import cli
from memagg.tests.unit.sim import import_fixtures as fx

PINNED = os.path.join(os.path.dirname(__file__), 'pinned_summaries.json')

RISING = ['--hosts', '30', '--days', '3', '--seed', '1', '--used-ratio',
          '0.8', '--mem-phase-sync', '0.8', '--cpu-mean', '0.05']
RUNS = {
    'default': ['--hosts', '40', '--days', '1', '--seed', '3'],
    'remote': RISING,
    'tlp': RISING + ['--remote-budget', 'tlp'],
    'window': ['--hosts', '30', '--days', '1', '--seed', '5',
               '--fill-window', '12', '--history-length', '48'],
}


def _summary(tmp_path, argv):
    assert cli.main(argv + ['--output-dir', str(tmp_path), '--quiet',
                            '--no-plots', '--jobs', '1']) == 0
    with open(tmp_path / 'summary.json') as stream:
        summary = json.load(stream)
    for basis in summary['bases'].values():
        basis.pop('wall_time_s')
    return {'bases': summary['bases'], 'comparison': summary['comparison']}


def _excerpt(tmp_path, fmt):
    """memagg-sim's arguments to replay fmt's excerpt on 16 hosts."""
    source = fx.write_fleet(tmp_path / fmt, fmt, vms=40, steps=576, seed=7)
    trace = tmp_path / (fmt + '.csv')
    assert sim_cmd.main(['import', fmt, str(source), '-o', str(trace),
                         '--quiet', '--start',
                         str(fx.T0) if fmt == 'bitbrains' else '0']) == 0
    return ['--trace', str(trace), '--hosts', '16']


def _pinned(name, summary):
    """The pinned summary ``name``; with MEMAGG_WRITE_PINNED set, ``summary``
    is written in its place."""
    with open(PINNED) as stream:
        pinned = json.load(stream)
    if os.environ.get('MEMAGG_WRITE_PINNED'):
        pinned[name] = summary
        with open(PINNED, 'w') as stream:
            json.dump(pinned, stream, indent=1, sort_keys=True)
            stream.write('\n')
    return pinned[name]


@pytest.mark.parametrize('name', sorted(RUNS))
def test_summary_is_pinned(tmp_path, name):
    summary = _summary(tmp_path, RUNS[name])
    if name in ('remote', 'tlp'):
        # The case exercises the reservoir.
        assert summary['bases']['wss']['remote']['grants']['made'] > 0
    assert summary == _pinned(name, summary)


@pytest.mark.parametrize('fmt', ['alibaba2018', 'bitbrains', 'google2019'])
def test_excerpt_summary_is_pinned(tmp_path, fmt):
    summary = _summary(tmp_path / 'out', _excerpt(tmp_path, fmt))
    # Packing by working set saves hosts on the excerpt, as on the traces.
    assert summary['comparison']['hosts_saved_ratio'] > 0.4
    assert summary == _pinned('excerpt-' + fmt, summary)


# Run in an interpreter of its own: the collector counts every object of
# the process, and a pytest worker holds what its earlier tests left (a
# worker of a full run once counted 9,117 objects in the first of the two
# runs here, which an interpreter of its own, or the same tests in one
# process, never did).
_COLLECTED = """
import collections, gc, json, sys
from memagg.sim import cli, engine
made, run = [], engine.Simulation.run
def collected_run(self, progress=None):
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    result = run(self, progress)
    made.append([gc.collect(), collections.Counter(
        type(o).__name__ for o in gc.garbage).most_common(5)])
    gc.set_debug(0)
    gc.garbage.clear()
    return result
engine.Simulation.run = collected_run
assert cli.main(json.loads(sys.argv[1])) == 0
print(json.dumps(made))
"""


def test_loop_makes_no_reference_cycles(tmp_path):
    """Simulation.run turns the cycle collector off: that holds only while
    what the loop drops, reference counting frees."""
    argv = RUNS['remote'] + ['--host-reclaim', 'senpai', '--output-dir',
                             str(tmp_path), '--quiet', '--no-plots',
                             '--jobs', '1']
    done = subprocess.run([sys.executable, '-c', _COLLECTED,
                           json.dumps(argv)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    made = json.loads(done.stdout.splitlines()[-1])
    # Both bases ran, and left nothing for the collector (else: how many
    # objects, and of which types).
    assert made == [[0, []], [0, []]]
