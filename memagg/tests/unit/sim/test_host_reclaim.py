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

"""memagg-sim's host reclaim model driven by the [host_reclaim] controller
memagg-compute loads (the senpai plug-in, through the same loader), in the
real loop: a VM without a balloon gives its cold memory, the host's memory
and the memory freed count it, and when its working set grows into what
was paged out the controller backs off."""
import argparse
import json

import numpy as np
import pytest

from memagg.common import exceptions
from memagg.drivers.host_reclaim import base as controller_base
from memagg.drivers.host_reclaim import senpai
from memagg.sim import cli as sim_cli
from memagg.sim import engine
from memagg.sim import host_reclaim
from memagg.sim import maxavg
from memagg.sim import trace as sim_trace
from memagg.tests.unit.sim import test_engine

STEADY, GROWN = 40, 10
BOOKED, HOT, GROWN_HOT, BALLOONED_HOT = 2048, 256, 1536, 512
GROW_MB = 64


def _controller(name='senpai', **values):
    options = dict(controller=name, cold_age_s=120.0, promotion_slo=0.2,
                   psi_some_max=5.0, grow_mb=GROW_MB, backoff=0.5)
    options.update(values)
    return controller_base.load(
        {controller_base.GROUP: argparse.Namespace(**options)})


@pytest.fixture
def trace(tmp_path):
    """One minute a step: 'bare' (no balloon) has 256 MiB hot of 2048 for
    STEADY steps, then 1536; 'ballooned' 512 throughout."""
    rows = []
    for t in range(STEADY + GROWN):
        hot = HOT if t < STEADY else GROWN_HOT
        rows.append((60 * t, 'bare', BOOKED, 2, 0.5, hot,
                     'h1' if t == 0 else ''))
        rows.append((60 * t, 'ballooned', BOOKED, 2, 0.5, BALLOONED_HOT,
                     'h1' if t == 0 else ''))
    return test_engine._csv(tmp_path, rows)


def _run(trace, controller):
    hosts = sim_trace.make_hosts(1, 8, 8192, named=trace.host_names)
    wss_maxavg = maxavg.maxavg(trace.wss_mb, trace.first, 1, 3600,
                               trace.step_s)
    model = host_reclaim.Model(controller, trace, wss_maxavg,
                               balloon=[name != 'bare'
                                        for name in trace.vm_ids])
    sim = engine.Simulation(
        trace, hosts, sim_trace.initial_hosts(trace, hosts), wss_maxavg,
        test_engine._algorithms('wss'), 'wss', engine.Settings(),
        host_reclaim=model)
    assert sim.result.reclaim is model.stats
    mem, limits = [], []
    for t in range(trace.steps):
        sim.step(t)
        mem.append(sim.histories.mem[0][-1] * 8192)
        limits.append(getattr(controller, '_limits', {}).get('bare'))
    return sim.result, model, np.array(mem), limits


def test_host_reclaim_frees_a_vm_without_balloon_then_backs_off(trace):
    controller = _controller()
    assert isinstance(controller, senpai.SenpaiController)
    result, model, mem, limits = _run(trace, controller)
    stats = result.reclaim
    bare = trace.vm_ids.index('bare')
    cold = BOOKED - HOT

    # It grows grow_mb a step while nothing is faulted back, never past
    # the cold memory, and the SLO holds.
    steady = stats.reclaimed_mb[:STEADY]
    assert np.all(np.diff(steady) <= GROW_MB) and np.all(np.diff(steady)
                                                         >= 0)
    assert steady[-1] == cold
    assert stats.over_slo[:STEADY].sum() == 0
    assert stats.promoted_pages[:STEADY].sum() == 0
    # Freed: the ballooned VM's booked less its WSS, and what host
    # reclaim holds of the other; the host's memory counts it too.
    assert stats.freed_mb[STEADY - 1] == (BOOKED - BALLOONED_HOT) + cold
    assert mem[STEADY - 1] == HOT + BALLOONED_HOT

    # The working set grows into the paged-out memory: faulted back,
    # over the SLO, the limit halved; no page-out of the hot set after.
    grown = GROWN_HOT - HOT
    assert stats.promoted_pages[STEADY] == grown * 256
    assert stats.over_slo[STEADY] == 1
    assert limits[STEADY - 1:STEADY + 1] == [cold + GROW_MB,
                                             (cold + GROW_MB) // 2]
    assert stats.promoted_pages[STEADY + 1:].sum() == 0
    assert stats.over_slo[STEADY + 1:].sum() == 0
    assert stats.reclaimed_mb[-1] == BOOKED - GROWN_HOT
    assert model.in_use_mb(trace.steps - 1)[bare] == GROWN_HOT
    assert mem[-1] == GROWN_HOT + BALLOONED_HOT


def test_without_a_controller_a_vm_without_balloon_counts_booked(trace):
    result, model, mem, _ = _run(trace, _controller('none'))

    assert not result.reclaim.reclaimed_mb.any()
    assert mem[STEADY - 1] == BOOKED + BALLOONED_HOT
    assert result.reclaim.freed_mb[STEADY - 1] == BOOKED - BALLOONED_HOT


def test_a_vm_that_leaves_is_forgotten(trace):
    controller = _controller()
    model = host_reclaim.Model(controller, trace,
                               np.maximum(trace.wss_mb, 0.0),
                               balloon=[False, False])
    running = np.array([True, True])
    for t in range(5):
        model.step(t, running)
    assert set(controller._limits) == {'bare', 'ballooned'}
    model.step(5, np.array([True, False]))
    assert set(controller._limits) == {'bare'}
    assert model.reclaimed[trace.vm_ids.index('ballooned')] == 0


def test_a_wrong_option_fails_naming_it():
    with pytest.raises(exceptions.InvalidParameter,
                       match=r'\[host_reclaim\] promotion_slo'):
        _controller(promotion_slo=0)
    with pytest.raises(ValueError, match='one flag per VM'):
        host_reclaim.Model(_controller(), _Trace(), np.zeros((1, 2)),
                           balloon=[True])


class _Trace:
    vms, steps, step_s = 2, 1, 60.0
    booked_mb = np.array([1024.0, 1024.0])


def _sim(capsys, tmp_path, *argv):
    out = tmp_path / ('-'.join(argv) or 'plain')
    status = sim_cli.main(['--hosts', '6', '--days', '0.25', '--no-plots',
                           '--jobs', '1', '--quiet', '--output-dir',
                           str(out)] + list(argv))
    err = capsys.readouterr().err
    assert status == 0, err
    return json.loads((out / 'summary.json').read_text())


def test_memagg_sim_frees_more_and_packs_tighter_with_host_reclaim(
        capsys, tmp_path):
    """Half the synthetic VMs without a balloon: they count their booked
    memory until host reclaim (the senpai controller) pages their cold
    memory out; then more memory is freed and fewer hosts stay on."""
    without = _sim(capsys, tmp_path, '--no-balloon', '0.5')
    senpai_ = _sim(capsys, tmp_path, '--no-balloon', '0.5',
                   '--host-reclaim', 'senpai')
    plain = _sim(capsys, tmp_path)

    off, on = without['bases']['wss'], senpai_['bases']['wss']
    assert off['host_reclaim']['reclaimed_mb']['max'] == 0
    assert on['host_reclaim']['reclaimed_mb']['mean'] > 0
    assert (on['host_reclaim']['freed_mb']['mean']
            > off['host_reclaim']['freed_mb']['mean'])
    assert on['active_hosts']['mean'] < off['active_hosts']['mean']
    assert senpai_['settings']['host_reclaim']['controller'] == 'senpai'
    assert plain['bases']['wss']['host_reclaim'] is None
    assert plain['settings']['host_reclaim'] is None


@pytest.mark.parametrize('argv, config, message', [
    (['--host-reclaim', 'bogus'], '',
     "'[host_reclaim] controller': no host reclaim controller 'bogus'; "
     "use one of none, senpai"),
    (['--host-reclaim', 'senpai'], '[host_reclaim]\npromotion_slo = 0\n',
     '[host_reclaim] promotion_slo'),
    (['--no-balloon', '2'], '', 'argument --no-balloon: must be a number '
     'from 0 to 1'),
])
def test_wrong_host_reclaim_input_is_one_line(capsys, tmp_path, argv,
                                              config, message):
    path = tmp_path / 'memagg.conf'
    path.write_text(config)
    status = sim_cli.main(['--hosts', '2', '--days', '0.1', '--no-plots',
                           '--config-file', str(path), '--output-dir',
                           str(tmp_path / 'out')] + argv)
    err = capsys.readouterr().err

    assert status == 2
    assert len(err.strip().splitlines()) == 1 and message in err, err
