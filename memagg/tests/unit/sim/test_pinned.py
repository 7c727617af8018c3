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
history) as the simulator gave them before it was made faster
(pinned_summaries.json, written by memagg-sim at commit 182d596). A speed-up
must leave every figure as it was; wall times are left out."""
import gc
import json
import os

import pytest

from memagg.sim import cli
from memagg.sim import engine

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


@pytest.mark.parametrize('name', sorted(RUNS))
def test_summary_is_pinned(tmp_path, name):
    with open(PINNED) as stream:
        pinned = json.load(stream)[name]
    summary = _summary(tmp_path, RUNS[name])
    if name in ('remote', 'tlp'):
        # The case exercises the reservoir.
        assert summary['bases']['wss']['remote']['grants']['made'] > 0
    assert summary == pinned


def test_loop_makes_no_reference_cycles(tmp_path, monkeypatch):
    """Simulation.run turns the cycle collector off: that holds only while
    what the loop drops, reference counting frees."""
    made = []
    run = engine.Simulation.run

    def collected_run(self, progress=None):
        gc.collect()
        result = run(self, progress)
        made.append(gc.collect())
        return result

    monkeypatch.setattr(engine.Simulation, 'run', collected_run)
    _summary(tmp_path, RUNS['remote'] + ['--host-reclaim', 'senpai'])
    # Both bases ran, and left nothing for the collector.
    assert made == [0, 0]
