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

"""The virtual-time loop on traces small enough to follow by hand, with the
default [consolidation] algorithms (the real plan_round and plug-ins)."""
import numpy as np
from oslo_config import cfg
import pytest

from memagg.conf import consolidation as conf_consolidation
from memagg.scheduler import consolidation
from memagg.sim import cli
from memagg.sim import config as sim_config
from memagg.sim import engine
from memagg.sim import histories
from memagg.sim import inputs as sim_inputs
from memagg.sim import maxavg
from memagg.sim import synthetic
from memagg.sim import trace as sim_trace


def _algorithms(basis, **overrides):
    conf = cfg.ConfigOpts()
    conf_consolidation.register_opts(conf)
    conf([], default_config_files=[], default_config_dirs=[])
    return consolidation.load_algorithms(
        conf.consolidation, dict(overrides, memory_basis=basis))


def _simulation(trace, hosts, basis, samples=1, options=None, **settings):
    initial = sim_trace.initial_hosts(trace, hosts)
    wss = maxavg.maxavg(trace.wss_mb, trace.first, samples, 3600,
                        trace.step_s)
    return engine.Simulation(
        trace, hosts, initial, wss, _algorithms(basis, **(options or {})),
        basis, engine.Settings(**settings))


def _simulate(trace, hosts, basis, samples=1, options=None, **settings):
    return _simulation(trace, hosts, basis, samples, options,
                       **settings).run()


# No room kept for working sets to grow, as Neat kept none: what the
# three-host cases below follow by hand.
NO_HEADROOM = {'fill_headroom_mem': 0}


def _csv(tmp_path, rows):
    path = tmp_path / 'trace.csv'
    path.write_text('time,vm,booked_mb,vcpus,cpu,wss_mb,host\n'
                    + ''.join('%s\n' % ','.join(map(str, row))
                              for row in rows))
    return sim_trace.read_trace(path)


@pytest.fixture
def three_hosts(tmp_path):
    """Three hosts of 4 cores and 1000 MiB, one VM each booking 600 MiB
    and using 300 MiB (400 MiB from step 4) and 0.2 cores, 8 steps."""
    rows = []
    for t in range(8):
        for vm, host in (('v1', 'h-a'), ('v2', 'h-b'), ('v3', 'h-c')):
            rows.append((t * 300, vm, 600, 1, 0.2, 300 if t < 4 else 400,
                         host if t == 0 else ''))
    trace = _csv(tmp_path, rows)
    return trace, sim_trace.make_hosts(None, 4, 1000, trace.host_names)


def test_booked_packing_keeps_every_host(three_hosts):
    result = _simulate(*three_hosts, 'booked')

    # Booked memory is 0.6 of each host: not underloaded, never overloaded.
    assert result.active_hosts.tolist() == [3] * 8
    assert result.migrations.sum() == 0
    assert result.mem_overloaded.sum() == result.cpu_overloaded.sum() == 0
    assert (result.power_on, result.power_off) == (0, 0)


def test_wss_packing_empties_two_hosts_then_counts_memory_overload(
        three_hosts):
    result = _simulate(*three_hosts, 'wss', options=NO_HEADROOM)

    # Step 0: working sets are 0.3 of each host, all underloaded; h-a's VM
    # goes to h-b (first by name), h-b having received one stays, h-c's
    # goes to h-b too (300 more MiB fit under 0.95 x 1000 with no
    # headroom). Both land and h-a, h-c power off at step 1.
    # Step 4: the working sets grow to 400 MiB: h-b's add up to 1200 MiB
    # > 1000 (memory overload, one host-step); its memory utilisation 1.2
    # is above the 0.95 threshold, one VM (v2: v1 and v3 moved less than
    # the cool-down ago) leaves for h-a, woken for it, and lands at step
    # 5.
    # Steps 5-7: h-a (400 MiB) is underloaded, but h-b has no room for
    # its VM: kept, a partial plan each round.
    assert result.active_hosts.tolist() == [3, 1, 1, 1, 1, 2, 2, 2]
    assert result.mem_overloaded.tolist() == [0, 0, 0, 0, 1, 0, 0, 0]
    assert result.cpu_overloaded.sum() == 0
    assert result.migrations.tolist() == [2, 0, 0, 0, 1, 0, 0, 0]
    assert result.by_trigger == {'overload:memory': 1,
                                 'underload:cpu+memory': 2}
    assert (result.power_on, result.power_off) == (1, 2)
    assert (result.partial_rounds, result.kept, result.unplaced) == (3, 3, 0)
    assert result.rounds == 8


def test_memory_headroom_leaves_room_for_working_sets_to_grow(
        three_hosts):
    result = _simulate(*three_hosts, 'wss')

    # By default h-b is filled to 0.95 - 0.15 of its memory: h-a's VM
    # joins it (600 MiB), h-c's does not (900 > 800) and h-c stays on.
    # When the working sets grow to 400 MiB h-b holds 800 MiB: no memory
    # overload, nothing moves again.
    assert result.active_hosts.tolist() == [3] + [2] * 7
    assert result.by_trigger == {'underload:cpu+memory': 1}
    assert result.mem_overloaded.sum() == 0


def test_a_vm_that_just_moved_stays_within_the_cool_down(three_hosts):
    hosts = three_hosts[1]
    cooling = _simulation(*three_hosts, 'wss', options=NO_HEADROOM)
    free = _simulation(*three_hosts, 'wss', options=dict(
        NO_HEADROOM, migration_cooldown=0))

    for sim in (cooling, free):
        sim.run()

    # v1 and v3 moved to h-b at step 0 (0 s): at step 4 (1200 s) they are
    # within the 3600 s cool-down and v2 leaves h-b instead of v1, the
    # smallest uuid among equals.
    assert cooling.moved_at.tolist() == [0.0, 1200.0, 0.0]
    assert [hosts.names[h] for h in cooling.host_of] == ['h-b', 'h-a', 'h-b']
    assert [hosts.names[h] for h in free.host_of] == ['h-a', 'h-b', 'h-b']
    assert cooling.result.by_trigger == free.result.by_trigger


def test_hosts_take_part_in_no_more_migrations_an_hour_than_the_cap(
        three_hosts):
    # One migration per host and hour: h-b takes h-a's VM at step 0 and
    # cannot take h-c's, which stays on.
    sim = _simulation(*three_hosts, 'wss', options=dict(
        NO_HEADROOM, max_migrations_per_host_hour=1))

    result = sim.run()

    assert result.active_hosts.tolist() == [3] + [2] * 7
    assert result.by_trigger == {'underload:cpu+memory': 1}
    # The step-0 migration counts for an hour of 5-minute steps, then no
    # more.
    assert sim._recent(11, set()).host_moves == {'h-a': 1, 'h-b': 1}
    assert sim._recent(12, set()).host_moves == {}


def test_longer_migration_time_keeps_hosts_busy(three_hosts):
    result = _simulate(*three_hosts, 'wss', options=NO_HEADROOM,
                       migration_steps=3)

    # The step-0 moves land at step 3; meanwhile the hosts are on and sit
    # out the rounds.
    assert result.active_hosts.tolist()[:4] == [3, 3, 3, 1]
    assert result.migrations.tolist()[:3] == [2, 0, 0]


def test_booked_basis_still_selects_by_working_set(tmp_path):
    # h-a books all its 1000 MiB (1.0 > 0.95: memory overload). By booked
    # memory the cheaper VM to move is small-flavor (300 < 700); by working
    # set, what a live migration copies, it is big-flavor (100 < 250), the
    # one ALGORITHMS.md §3.3 selects whatever the basis. Every host uses
    # 0.6 of its 4 cores or more: none is underloaded.
    vms = (('big-flavor', 700, 0.2, 100, 'h-a'),
           ('small-flavor', 300, 2.4, 250, 'h-a'),
           ('busy', 600, 2.4, 500, 'h-b'),
           ('roomy', 200, 2.4, 100, 'h-c'))
    trace = _csv(tmp_path, [
        (t * 300, vm, booked, 4, cpu, wss, host if t == 0 else '')
        for t in range(2) for vm, booked, cpu, wss, host in vms])
    hosts = sim_trace.make_hosts(None, 4, 1000, trace.host_names)
    sim = _simulation(trace, hosts, 'booked')

    result = sim.run()

    # big-flavor's 700 booked MiB fit on h-c (750 free under 0.95), not on
    # h-b (350); small-flavor would have gone to h-b.
    assert result.migrations.tolist() == [1, 0]
    assert result.by_trigger == {'overload:memory': 1}
    assert {vm: hosts.names[h] for vm, h in zip(
        trace.vm_ids, sim.host_of.tolist())} == {
        'big-flavor': 'h-c', 'small-flavor': 'h-a', 'busy': 'h-b',
        'roomy': 'h-c'}


def test_cpu_overload_is_counted_from_use(tmp_path):
    # A 4-vCPU VM using 3 cores on a 2-core host; too few samples for MHOD
    # to act.
    trace = _csv(tmp_path, [(t * 60, 'big', 512, 4, 3, 100,
                             'h' if t == 0 else '') for t in range(3)])
    hosts = sim_trace.make_hosts(None, 2, 1000, trace.host_names)

    result = _simulate(trace, hosts, 'wss')

    assert result.cpu_overloaded.tolist() == [1, 1, 1]
    assert result.mem_overloaded.sum() == 0
    assert result.migrations.sum() == 0


def test_vms_without_host_are_placed_and_too_big_ones_rejected(tmp_path):
    rows = []
    for t in range(3):
        rows.append((t * 60, 'small', 500, 1, 0.5, 100, ''))
        rows.append((t * 60, 'huge', 4000, 1, 0.5, 200, ''))
    # A VM arriving at step 1 and leaving after step 1.
    rows.append((60, 'late', 500, 1, 0.5, 100, ''))
    trace = _csv(tmp_path, rows)
    hosts = sim_trace.make_hosts(3, 4, 1000)

    booked = _simulate(trace, hosts, 'booked')
    wss = _simulate(trace, hosts, 'wss')

    # Booked, 4000 MiB fits on no 1000 MiB host; by working set it does.
    assert booked.rejected == ['huge']
    assert wss.rejected == []
    assert booked.active_hosts[0] == 3


def test_leaving_out_spare_inactive_hosts_changes_nothing():
    trace, hosts = synthetic.generate(synthetic.Params(
        hosts=30, days=1, seed=5))
    wss = maxavg.maxavg(trace.wss_mb, trace.first, 5, 3600, trace.step_s)
    results = []
    for spare in (1, None):
        sim = engine.Simulation(trace, hosts, trace.initial_host, wss,
                                _algorithms('wss'), 'wss', engine.Settings())
        sim.spare_inactive = spare
        results.append(sim.run())
    pruned, full = results

    assert pruned.power_on > 0
    for name in ('active_hosts', 'migrations', 'mem_overloaded',
                 'cpu_overloaded'):
        np.testing.assert_array_equal(getattr(pruned, name),
                                      getattr(full, name))
    assert pruned.by_trigger == full.by_trigger


def test_run_stops_if_the_planner_moves_a_stand_in(three_hosts,
                                                   monkeypatch):
    # Pretend the engine gave real VmStates to h-a only: h-c, underloaded
    # too, is shown with one VmState standing for its VMs, which must
    # never be migrated.
    states = engine.Simulation._states
    monkeypatch.setattr(
        engine.Simulation, '_states',
        lambda self, t, sums, involved, spare: states(
            self, t, sums, involved & {0}, spare))

    with pytest.raises(RuntimeError, match='plan_round moved the VMs of '
                                           'host h-c'):
        _simulate(*three_hosts, 'wss', options=NO_HEADROOM)


@pytest.mark.parametrize('window', [1, 2, 5, 7, 40])
def test_vm_peaks_are_the_maxima_of_the_window(window):
    """VmPeaks' running maximum equals the maximum of the last ``window``
    steps of each VM, at every step (including the first, shorter ones)."""
    rng = np.random.default_rng(window)
    cpu = rng.random((37, 5)) * (rng.random((37, 5)) > 0.3)
    peaks = histories.VmPeaks(cpu, window)
    for t in range(cpu.shape[0]):
        expected = cpu[max(0, t - window + 1):t + 1].max(axis=0)
        assert peaks.at(t).tolist() == expected.tolist(), t
        # Asking again for the same step changes nothing.
        assert peaks.at(t).tolist() == expected.tolist(), t


def test_engine_counts_migrations_by_trigger_per_step():
    result = engine_results()['wss']
    by_step = sum(result.migrations_by_trigger.values())

    assert len(result.by_trigger) >= 2
    assert sorted(result.migrations_by_trigger) == sorted(result.by_trigger)
    assert by_step.tolist() == result.migrations.tolist()
    for trigger, steps in result.migrations_by_trigger.items():
        assert steps.sum() == result.by_trigger[trigger]


def engine_results():
    """Both bases over a synthetic day, run by memagg-sim's parts."""
    args = cli.build_parser().parse_args(
        ['--hosts', '40', '--days', '1', '--seed', '3'])
    conf = sim_config.load_config(None)
    config = sim_config.configure(
        conf, {name: getattr(args, name)
               for name in sim_config.simulated_options()}, args)
    trace, hosts, initial, _ = sim_inputs.inputs(args)
    wss = config.wss_maxavg(trace)
    return {basis: config.simulation(trace, hosts, initial, wss,
                                     config.algorithms(basis)).run()
            for basis in ('booked', 'wss')}
