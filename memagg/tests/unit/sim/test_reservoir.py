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

"""memagg-sim's reservoir model (memagg.sim.reservoir) on traces small
enough to follow by hand, through the simulation loop (rounds only at step
0, where no host is under- or overloaded, so that nothing migrates)."""
import json

from oslo_config import cfg
import numpy as np
import pytest

from memagg.conf import consolidation as conf_consolidation
from memagg.drivers.remote_budget import fixed
from memagg.drivers.remote_budget import tlp
from memagg.drivers.reservoir import donors
from memagg.scheduler import consolidation
from memagg.sim import cli as sim
from memagg.sim import config as sim_config
from memagg.sim import engine
from memagg.sim import maxavg
from memagg.sim import report as sim_report
from memagg.sim import reservoir
from memagg.sim import trace as sim_trace

STEP_S = 300


def _trace(tmp_path, rows):
    """A trace of ``rows`` (step, vm, booked, cpu, wss, host at its first
    step), 4-vCPU VMs."""
    path = tmp_path / 'trace.csv'
    path.write_text('time,vm,booked_mb,vcpus,cpu,wss_mb,host\n' + ''.join(
        '%d,%s,%d,4,%s,%s,%s\n' % (t * STEP_S, vm, booked, cpu, wss, host)
        for t, vm, booked, cpu, wss, host in rows))
    return sim_trace.read_trace(path)


def _week(tmp_path, a_wss, b_wss=None, leaves=None):
    """Two hosts of 4 cores and 1000 MiB: h-a runs v1 and v2 (800 MiB
    booked, 1.2 cores each), h-b runs v3 (1000 MiB booked, 2.4 cores).
    ``a_wss``: per step, v1's and v2's working sets; ``b_wss``: v3's (100
    MiB by default); ``leaves``: v2's last step."""
    b_wss = b_wss or [100] * len(a_wss)
    rows = []
    for t, ((w1, w2), w3) in enumerate(zip(a_wss, b_wss)):
        first = t == 0
        rows.append((t, 'v1', 800, 1.2, w1, 'h-a' if first else ''))
        if leaves is None or t <= leaves:
            rows.append((t, 'v2', 800, 1.2, w2, 'h-a' if first else ''))
        rows.append((t, 'v3', 1000, 2.4, w3, 'h-b' if first else ''))
    trace = _trace(tmp_path, rows)
    return trace, sim_trace.make_hosts(None, 4, 1000, trace.host_names)


def _model(trace, hosts, ratio=0.5, budget=None, penalty=0.0):
    # No donor reserve and 100 MiB slabs: round numbers.
    return reservoir.Model(
        reservoir.Settings(max_remote_ratio=ratio, donor_reserve_mb=0,
                           slab_size_mb=100, penalty=penalty),
        budget or fixed.FixedBudget(), donors.LargestFirst(), trace, hosts)


def _simulation(trace, hosts, model, **settings):
    conf = cfg.ConfigOpts()
    conf_consolidation.register_opts(conf)
    conf([], default_config_files=[], default_config_dirs=[])
    algorithms = consolidation.load_algorithms(conf.consolidation,
                                               {'memory_basis': 'wss'})
    wss = maxavg.maxavg(trace.wss_mb, trace.first, 1, 3600, trace.step_s)
    return engine.Simulation(
        trace, hosts, sim_trace.initial_hosts(trace, hosts), wss, algorithms,
        'wss', engine.Settings(round_steps=1000, **settings), model)


# v1 and v2 grow from 400 to 700 and 500 MiB: h-a's 1200 MiB are 200 more
# than its memory; v1's share of that is 200 x 700 / 1200, v2's 200 x 500
# / 1200.
GROWS = [(400, 400), (700, 500)]


def test_a_host_over_its_memory_borrows_and_is_not_overloaded(tmp_path):
    trace, hosts = _week(tmp_path, GROWS)
    alone = _simulation(trace, hosts, None).run()
    sim = _simulation(trace, hosts, _model(trace, hosts, penalty=0.5))

    result = sim.run()

    assert alone.mem_overloaded.tolist() == [0, 1]
    assert alone.remote is None
    assert result.mem_overloaded.tolist() == [0, 0]
    assert result.migrations.sum() == 0
    stats = result.remote
    # fixed: each VM asks its whole cap, 0.5 x 800 MiB, of h-b, whose
    # 1000 - 100 MiB are idle.
    assert (stats.grants_made, stats.made_mb, stats.refused) == (2, 800, 0)
    assert sim.reservoir.lent.tolist() == [0, 800]
    assert sim.reservoir.held.tolist() == [400, 400, 0]
    assert stats.granted_mb.tolist() == [0, 800]
    assert stats.in_use_mb.tolist() == pytest.approx([0, 200])
    assert stats.remote_vms.tolist() == [0, 2]
    assert stats.remote_hosts.tolist() == [0, 1]
    assert stats.running_vms.tolist() == [3, 3]
    # The penalty: 0.5 x 1.2 cores x (116.7 / 700) for v1, the same 0.1
    # for v2: h-a uses 2.6 of its 4 cores.
    assert stats.penalty_core_s == pytest.approx(0.2 * STEP_S)
    assert sim.histories.cpu[0][-1] == pytest.approx(2.6 / 4)


def test_beyond_the_cap_a_host_is_overloaded(tmp_path):
    # 1600 MiB on h-a: each VM is short of 300 MiB; a cap of 0.25 x 800
    # covers 200 of it.
    trace, hosts = _week(tmp_path, [(400, 400), (800, 800)])
    sim = _simulation(trace, hosts, _model(trace, hosts, ratio=0.25))
    model = sim.reservoir
    uncovered = []
    step = model.step
    model.step = lambda *args: uncovered.append(step(*args)) or uncovered[-1]

    result = sim.run()

    assert result.mem_overloaded.tolist() == [0, 1]
    assert model.held.tolist() == [200, 200, 0]
    assert uncovered[1].tolist() == pytest.approx([200, 0])
    assert result.remote.in_use_mb[1] == pytest.approx(400)


def test_grants_are_released_reclaimed_and_asked_again(tmp_path):
    # Step 1: v1 and v2 borrow 400 MiB each of h-b. Step 2: v3 grows to
    # 950 MiB, h-b can lend only 50 and takes all 800 back: both grants
    # end, h-a asks again, no donor has a slab (two requests refused) and
    # h-a is overloaded. Step 3: v3 is back at 100, both VMs borrow
    # again. Step 4: v2 has left, its grant is released; v1 keeps its own.
    trace, hosts = _week(
        tmp_path, [(400, 400), (700, 500), (700, 500), (700, 500),
                   (400, 0)],
        b_wss=[100, 100, 950, 100, 100], leaves=3)
    sim = _simulation(trace, hosts, _model(trace, hosts))

    result = sim.run()

    stats = result.remote
    assert result.mem_overloaded.tolist() == [0, 0, 1, 0, 0]
    assert (stats.grants_made, stats.grants_ended) == (4, 3)
    assert (stats.made_mb, stats.reclaimed_mb, stats.released_mb) == (
        1600, 800, 400)
    assert stats.refused == 2
    assert stats.granted_mb.tolist() == [0, 800, 0, 800, 400]
    assert stats.remote_vms.tolist() == [0, 2, 0, 2, 0]
    assert sim.reservoir.lent.tolist() == [0, 400]
    assert list(sim.reservoir.grants) == [0]


def test_a_donor_takes_back_from_the_vm_most_over_its_share_first(
        tmp_path):
    # h-b lends v1 300 MiB and then v2 300 MiB (the newer grant); v1's
    # limit, its L1 share, is 100: 200 over, v2 at its own use. 200 MiB
    # taken back come from v1, a slab at a time, not from the newest
    # grant; 200 more, both at their share by then, from the newest, v2's.
    trace, hosts = _week(tmp_path, [(400, 400), (400, 400)])
    model = _model(trace, hosts)
    for vm in (0, 1):
        model._lend(vm, [(1, 3)], {1: 1000})
    model.limits[0] = 100

    model._reclaim(np.array([1000, 400]))
    assert model.held.tolist()[:2] == [100, 300]
    model._reclaim(np.array([1000, 200]))
    assert model.held.tolist()[:2] == [100, 100]
    assert model.stats.reclaimed_mb == 400


def test_two_tiers_keep_reclaimed_memory_local_and_promote_it_back(
        tmp_path):
    # The steps of the test above, with two tiers. Step 2: h-b takes its
    # 800 MiB back, and they stay v1's and v2's in h-a's local copy (L2):
    # h-a is not overloaded, and their L2 share costs the L2 penalty.
    # Step 3: h-b has room again, and the VMs that ran partly remote
    # promote their L2 back to it.
    trace, hosts = _week(
        tmp_path, [(400, 400), (700, 500), (700, 500), (700, 500),
                   (400, 0)],
        b_wss=[100, 100, 950, 100, 100], leaves=3)
    model = reservoir.Model(
        reservoir.Settings(max_remote_ratio=0.5, donor_reserve_mb=0,
                           slab_size_mb=100, penalty=0.0, l2_penalty=0.4),
        fixed.FixedBudget(), donors.LargestFirst(), trace, hosts)
    sim = _simulation(trace, hosts, model)

    result = sim.run()

    stats = result.remote
    assert result.mem_overloaded.tolist() == [0, 0, 0, 0, 0]
    assert stats.l2_mb.tolist() == [0, 0, 800, 0, 0]
    assert stats.granted_mb.tolist() == [0, 800, 0, 800, 400]
    assert (stats.demoted_mb, stats.promoted_mb, stats.l2_granted_mb,
            stats.refused) == (800, 800, 0, 0)
    assert stats.in_use_mb[2] == pytest.approx(200)
    # 0.4 x 1.2 cores x (116.7 / 700) for v1, the same for v2, at step 2.
    assert stats.penalty_core_s == pytest.approx(0.16 * STEP_S)
    summary = json.loads(json.dumps(
        sim_report.remote_summary(result.remote, 10, STEP_S)))['tiers']
    assert summary['promoted_mb'] == 800 and summary['l2_mb']['max'] == 800


def test_with_two_tiers_what_donors_cannot_lend_is_granted_locally(
        tmp_path):
    # v3 keeps h-b busy (950 of 1000 MiB): v1 and v2 get their caps in
    # their host's local copy at once, and h-a is not overloaded.
    trace, hosts = _week(tmp_path, GROWS, b_wss=[950, 950])
    model = reservoir.Model(
        reservoir.Settings(max_remote_ratio=0.5, donor_reserve_mb=0,
                           slab_size_mb=100, penalty=0.0, l2_penalty=0.4),
        fixed.FixedBudget(), donors.LargestFirst(), trace, hosts)

    result = _simulation(trace, hosts, model).run()

    assert result.mem_overloaded.tolist() == [0, 0]
    stats = result.remote
    assert (stats.l2_granted_mb, stats.refused, stats.grants_made) == (
        800, 0, 0)
    assert stats.l2_mb.tolist() == [0, 800]


@pytest.mark.parametrize('in_flight', [False, True])
def test_a_donor_keeps_the_memory_of_migrations_coming_to_it(tmp_path,
                                                             in_flight):
    # As GROWS, and h-c runs v4 (940 MiB: 60 idle, less than a slab). With
    # v4 migrating to h-b (planned at step 0, landing at step 3), h-b keeps
    # its 900 idle MiB for it: nothing is lent and h-a is overloaded.
    rows = []
    for t, (w1, w2) in enumerate(GROWS):
        for vm, booked, cpu, wss, host in (
                ('v1', 800, 1.2, w1, 'h-a'), ('v2', 800, 1.2, w2, 'h-a'),
                ('v3', 200, 2.4, 100, 'h-b'), ('v4', 1000, 2.4, 940, 'h-c')):
            rows.append((t, vm, booked, cpu, wss, host if t == 0 else ''))
    trace = _trace(tmp_path, rows)
    hosts = sim_trace.make_hosts(None, 4, 1000, trace.host_names)
    sim = _simulation(trace, hosts, _model(trace, hosts),
                      migration_steps=3)
    sim.step(0)
    if in_flight:
        sim.landing[3].append((3, 2, 1))

    sim.step(1)

    if in_flight:
        assert sim.reservoir.lent.tolist() == [0, 0, 0]
        assert sim.result.mem_overloaded[1] == 1
        assert sim.result.remote.refused == 2
    else:
        assert sim.reservoir.lent.tolist() == [0, 800, 0]
        assert sim.result.mem_overloaded[1] == 0


def test_tlp_grows_limits_a_step_at_a_time_where_fixed_asks_the_cap(
        tmp_path):
    trace, hosts = _week(tmp_path, GROWS)
    sim = _simulation(trace, hosts, _model(trace, hosts,
                                           budget=tlp.TlpBudget()))

    result = sim.run()

    # h-a's budget is its VMs' caps, 800 MiB; short, each VM's limit grows
    # from nothing by 2 % of it, 16 MiB, asked as one 100 MiB slab: v2
    # (83.3 MiB short) is covered, v1 (116.7) is not.
    assert sim.reservoir.held.tolist() == [100, 100, 0]
    assert sim.reservoir.limits == {0: 16, 1: 16}
    assert result.mem_overloaded.tolist() == [0, 1]


class _EveryPeriod(reservoir.Model):
    """Runs tlp on every host with a VM whose limit it keeps, every
    period, as memagg-compute does on its host."""

    def _remember(self, vms, limits, unsettled):
        super()._remember(vms, limits, unsettled)
        self.moving.update(self.limits)


def test_steady_tlp_limits_leave_their_hosts_out_and_change_nothing(
        tmp_path):
    # h-a is short at steps 1 to 6; h-b has 150 MiB to lend, a slab, so
    # its VMs' limits grow beyond what they get (v1 holds the slab), and
    # shrink step by step once h-a is no longer short: v1's until what it
    # holds is three quarters of it (the slack threshold), v2's to
    # nothing. Then neither moves, and h-a is left out.
    trace, hosts = _week(tmp_path, GROWS + [(700, 500)] * 5
                         + [(400, 400)] * 100, b_wss=[850] * 107)
    results = []
    for kind in (reservoir.Model, _EveryPeriod):
        model = kind(reservoir.Settings(max_remote_ratio=0.5,
                                        donor_reserve_mb=0,
                                        slab_size_mb=100, penalty=0.0),
                     tlp.TlpBudget(), donors.LargestFirst(), trace, hosts)
        _simulation(trace, hosts, model).run()
        results.append(model)
    skipping, every = results

    assert skipping.limits == every.limits == {0: 133}
    assert not skipping.moving
    assert skipping.held.tolist() == every.held.tolist()
    for name in ('in_use_mb', 'granted_mb', 'remote_vms'):
        assert (getattr(skipping.stats, name).tolist()
                == getattr(every.stats, name).tolist())
    assert skipping.stats.grants_made == every.stats.grants_made


def test_memagg_sim_reports_remote_memory_and_uses_tlp_when_told(
        capsys, tmp_path):
    argv = ['--hosts', '4', '--days', '1', '--no-plots', '--quiet',
            '--jobs', '1']

    def summary(name, *more):
        out = tmp_path / name
        assert sim.main(argv + ['--output-dir', str(out)] + list(more)) == 0
        return json.loads((out / 'summary.json').read_text())

    on = summary('on', '--remote-budget', 'tlp')
    off = summary('off', '--max-remote-ratio', '0')

    assert on['settings']['reservoir']['remote_budget'] == 'tlp'
    assert on['settings']['reservoir']['remote_memory'] is True
    remote = on['bases']['wss']['remote']
    assert set(remote) == {'in_use_mb', 'granted_mb', 'grants',
                           'partly_remote', 'penalty_core_seconds'}
    assert set(remote['partly_remote']) == {'vm_seconds', 'vm_fraction',
                                            'host_seconds', 'host_fraction'}
    assert off['settings']['reservoir']['remote_memory'] is False
    assert off['bases']['wss']['remote'] is None
    # Two tiers when told: the local tier's figures, and the same line in
    # the report.
    tiered = summary('tiers', '--l2-penalty', '0.4')
    assert tiered['settings']['reservoir']['l2_penalty'] == 0.4
    assert set(tiered['bases']['wss']['remote']['tiers']) == {
        'l2_mb', 'demoted_mb', 'promoted_mb', 'l2_granted_mb'}
    assert 'tiers' not in remote
    # The very plug-in memagg-compute loads for [reservoir] remote_budget.
    config = sim_config.configure(
        sim_config.load_config(None), {},
        sim.build_parser().parse_args(['--remote-budget', 'tlp']))
    assert isinstance(config.remote_plugins()[0], tlp.TlpBudget)


def test_an_unknown_remote_budget_is_refused(capsys, tmp_path):
    status = sim.main(['--hosts', '4', '--days', '1', '--remote-budget',
                       'nope', '--output-dir', str(tmp_path)])

    assert status == 2
    assert capsys.readouterr().err == (
        "memagg-sim: error: Invalid value for '[reservoir] remote_budget': "
        "no remote budget policy 'nope'; use one of fixed, tlp\n")
