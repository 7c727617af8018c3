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

"""The consolidation round planner, on hand-computed cases.

Most cases use threshold detectors (round_fixtures.SIMPLE) so that each
decision can be checked by hand; one runs the configured defaults.
"""
import copy

import pytest

from memagg.common import exceptions
from memagg.conf import CONF
from memagg.drivers.consolidation import base
from memagg.scheduler import consolidation as cons
from memagg.scheduler import plans
from memagg.tests.unit.scheduler.round_fixtures import (
    HYSTERESIS, SIMPLE, host, migrations, vm)


def test_memory_overload_moves_the_smallest_vm_until_relieved(algorithms):
    # a: 400+300+300 = 1000 MiB of 1000 (1.0 > 0.95). Without one 300 MiB
    # VM it is at 0.7: one move is enough. Of the two 300 MiB VMs the busier
    # (a3, cpu 2) leaves.
    a = host('a', [vm('a1', 1, 400), vm('a2', 1, 300), vm('a3', 2, 300)])
    b = host('b', [vm('b1', 3, 500)])
    plan = cons.plan_round([a, b], algorithms)
    assert plan.overloaded == {'a': ['mem']}
    assert plan.underloaded == []
    assert migrations(plan) == [('a3', 'a', 'b', 'overload:memory')]
    assert plan.complete


def test_cpu_and_memory_overload_reason_names_both(algorithms):
    a = host('a', [vm('a1', 5, 600), vm('a2', 4, 400)])   # cpu 0.9, mem 1.0
    b = host('b', [vm('b1', 3, 500)])
    plan = cons.plan_round([a, b], algorithms)
    assert plan.overloaded == {'a': ['cpu', 'mem']}
    # a2 (smallest memory) leaves: a is at cpu 0.5, mem 0.6.
    assert migrations(plan) == [('a2', 'a', 'b', 'overload:cpu+memory')]


def test_selection_continues_while_still_overloaded(algorithms):
    # cpu 9.5 of 10 (0.95): the smallest VM, a0 with 2 cpu, leaves and
    # the host is at 0.75, no longer overloaded.
    vms = [vm('a%d' % i, 2 if i < 4 else 1.5, 100 + i) for i in range(5)]
    a = host('a', vms)
    b = host('b', [vm('b1', 4, 100)])
    c = host('c', [vm('c1', 4, 100)])
    plan = cons.plan_round([a, b, c], algorithms)
    moved = [m[0] for m in migrations(plan)]
    assert moved == ['a0']
    # With 1.5 more cpu in use: 1.1, then 0.9 without a0, then 0.7
    # without a1 (the next smallest).
    heavy = host('a', vms, extra_cpu=1.5)
    plan = cons.plan_round([heavy, b, c], algorithms)
    assert sorted(m[0] for m in migrations(plan)) == ['a0', 'a1']


def test_underloaded_host_is_emptied_then_powered_off(algorithms):
    a = host('a', [vm('a1', 1, 100)])                  # cpu 0.1, mem 0.1
    b = host('b', [vm('b1', 5, 500)])                  # busy, fits a1
    plan = cons.plan_round([a, b], algorithms)
    assert plan.underloaded == ['a']
    assert [(x.action_type, x.source_host, x.dest_host, x.reason)
            for x in plan.actions] == [
        ('migrate', 'a', 'b', 'underload:cpu+memory'),
        ('power_off', 'a', None, 'underload:cpu+memory')]


def test_empty_active_host_is_powered_off(algorithms):
    idle = host('idle', [])
    b = host('b', [vm('b1', 5, 500)])
    plan = cons.plan_round([idle, b], algorithms)
    assert [(x.action_type, x.source_host) for x in plan.actions] == [
        ('power_off', 'idle')]


def test_last_active_host_stays_on(algorithms):
    # Both idle: 'a' (less used) is emptied onto 'b'; 'b' received a VM.
    # Alone and empty, 'c' is not powered off either.
    a = host('a', [vm('a1', 0.5, 50)])
    b = host('b', [vm('b1', 1, 100)])
    plan = cons.plan_round([a, b], algorithms)
    assert [x.action_type for x in plan.actions] == ['migrate', 'power_off']
    plan = cons.plan_round([host('c', []),
                            host('spare', [], active=False)], algorithms)
    assert plan.actions == []
    assert 'last active host' in plan.kept['c']


def test_underloaded_host_that_cannot_be_emptied_is_kept_whole(algorithms):
    # a's 150 MiB VM fits on b, its 190 MiB VM fits nowhere (b has 950-800
    # = 150 MiB room): nothing moves, and the reason says which VM.
    a = host('a', [vm('a1', 0.5, 150), vm('a2', 0.5, 190)], mem=2000)
    b = host('b', [vm('b1', 1, 800)])
    plan = cons.plan_round([a, b], algorithms)
    assert plan.actions == []
    assert list(plan.kept) == ['a']
    assert 'a2' in plan.kept['a'] and 'memory' in plan.kept['a']
    assert not plan.complete


def test_least_used_underloaded_host_is_emptied_first_onto_the_other(
        algorithms):
    a = host('a', [vm('a1', 0.5, 50)])
    b = host('b', [vm('b1', 1, 150)])
    plan = cons.plan_round([b, a], algorithms)
    # a is emptied onto b; b received a VM, so it is not emptied in turn.
    assert migrations(plan) == [('a1', 'a', 'b', 'underload:cpu+memory')]
    assert [x.source_host for x in plan.actions
            if x.action_type == plans.POWER_OFF] == ['a']


def test_inactive_host_is_woken_for_an_overload_but_not_to_empty_a_host(
        algorithms):
    a = host('a', [vm('a1', 1, 600), vm('a2', 1, 400)])   # mem 1.0
    spare = host('spare', [], active=False)
    plan = cons.plan_round([a, spare], algorithms)
    assert [(x.action_type, x.source_host, x.dest_host, x.reason)
            for x in plan.actions] == [
        ('power_on', 'spare', None, 'overload:memory'),
        ('migrate', 'a', 'spare', 'overload:memory')]

    # 'full' has 950 - 940 = 10 MiB of room: i1 would need the spare.
    idle = host('idle', [vm('i1', 0.5, 50)])
    full = host('full', [vm('f1', 5, 940)])
    plan = cons.plan_round([idle, full, spare], algorithms)
    assert plan.actions == []
    assert 'i1' in plan.kept['idle']


def test_partial_plan_keeps_what_it_can_and_says_why(algorithms):
    # Both a and b are memory-overloaded; c has 950 - 500 = 450 MiB of
    # room for one of the two VMs that must leave. Decreasing order places
    # a2 (400 MiB) first; b2 (380 MiB) then fits nowhere: c has 50 left, a
    # and b 950 - 600 = 350 each.
    a = host('a', [vm('a1', 1, 600), vm('a2', 1, 400)])
    b = host('b', [vm('b1', 1, 600), vm('b2', 1, 380)])
    c = host('c', [vm('c1', 3, 500)])
    plan = cons.plan_round([a, b, c], algorithms)
    assert migrations(plan) == [('a2', 'a', 'c', 'overload:memory')]
    assert list(plan.unplaced) == ['b2']
    assert plan.unplaced['b2'].startswith('memory')
    assert not plan.complete


def test_booked_basis_packs_by_flavor_memory(conf):
    wss = cons.load_algorithms(CONF.consolidation, SIMPLE)
    booked = cons.load_algorithms(CONF.consolidation,
                                  dict(SIMPLE, memory_basis='booked'))
    a = host('a', [vm('a1', 0.5, 100, booked=600)])
    b = host('b', [vm('b1', 5, 300, booked=600)])
    assert migrations(cons.plan_round([a, b], wss)) == [
        ('a1', 'a', 'b', 'underload:cpu+memory')]
    # By booked memory b is 600 of 950 full: a1's 600 do not fit.
    assert 'a' in cons.plan_round([a, b], booked).kept


def test_booked_basis_relieves_memory_by_booked_size(conf):
    booked = cons.load_algorithms(CONF.consolidation,
                                  dict(SIMPLE, memory_basis='booked'))
    # Memory history by booked size: 700 + 300 of 1000. Taking a2 (wss
    # 30, booked 300) off leaves 0.7 by booked memory; subtracting its wss
    # would leave 0.97, still overloaded, and move a1 too.
    a1 = vm('a1', 1, 100, booked=700)
    a2 = vm('a2', 2, 30, booked=300)
    a = base.HostState(name='a', cpu_total=10.0, mem_usable_mb=1000.0,
                       cpu_history=[0.3], mem_history=[1.0], vms=[a1, a2])
    b = host('b', [], mem=4000)
    b.cpu_history = b.mem_history = [0.5]
    plan = cons.plan_round([a, b], booked)
    assert migrations(plan) == [('a2', 'a', 'b', 'overload:memory')]


def test_callers_states_are_left_as_they_were(algorithms):
    hosts = [host('a', [vm('a1', 1, 600), vm('a2', 1, 400)]),
             host('b', [vm('b1', 1, 100)])]
    before = copy.deepcopy(hosts)
    cons.plan_round(hosts, algorithms)
    assert hosts == before


def test_defaults_are_neats_with_memory(conf):
    # Neat's plug-ins, but cpu overload by threshold rather than MHOD (the
    # consolidation admin guide's sweep over the public traces).
    algorithms = cons.load_algorithms(CONF.consolidation)
    assert [algorithms.underload_cpu.name, algorithms.overload_cpu.name,
            algorithms.overload_mem.name, algorithms.vm_selection.name,
            algorithms.placement.name] == [
        'last_n_average', 'threshold', 'threshold',
        'minimum_migration_time_max_cpu', 'best_fit_decreasing']
    assert algorithms.overload_mem.params['threshold'] == 0.95
    assert algorithms.placement.params['memory_basis'] == 'wss'
    # mhod needs its learning steps before it judges; with a long history
    # pinned at 1.0 it calls the host overloaded.
    busy = base.HostState(
        name='busy', cpu_total=4, mem_usable_mb=1000,
        cpu_history=[1.0] * 40, mem_history=[0.5] * 40,
        vms=[base.VmState('v1', [2.0] * 40, 300, 600),
             base.VmState('v2', [2.0] * 40, 200, 600)])
    spare = base.HostState(name='spare', cpu_total=4, mem_usable_mb=1000,
                           cpu_history=[0.6] * 40, mem_history=[0.6] * 40,
                           vms=[base.VmState('s1', [2.4] * 40, 600, 600)])
    plan = cons.plan_round([busy, spare], algorithms)
    assert plan.overloaded == {'busy': ['cpu']}


def test_hysteresis_refuses_a_fill_the_detector_would_flag(conf):
    # The cpu detector calls a host overloaded above 0.6, below the 0.8 to
    # which placement would fill: idle's VM (2 cores) would take b from
    # 0.5 to 0.7, where the detector flags it at the next round. The round
    # fills no host above what its detector accepts: idle is kept.
    algorithms = cons.load_algorithms(CONF.consolidation, dict(
        SIMPLE, overload_cpu_params={'threshold': 0.6}))
    idle = host('idle', [vm('i1', 2, 100)])
    b = host('b', [vm('b1', 5, 300)])

    assert algorithms.placement.place([b], idle.vms).placements == {
        'i1': 'b'}
    assert algorithms.overload_cpu.is_overloaded(b.cpu_history + [0.7])
    plan = cons.plan_round([idle, b], algorithms)
    assert plan.actions == []
    assert plan.kept['idle'] == (
        'VM i1 fits on no other active host: cpu: no host has 2.0 cpu free '
        'for it (the most free is 1.0)')


def test_headroom_keeps_a_gap_under_the_detector(conf):
    # b at 0.55 of 10 cores takes 1.4 more (0.69) but not 2 (0.75, under
    # the detector's 0.8 but above its 0.7 fill level).
    algorithms = cons.load_algorithms(CONF.consolidation, HYSTERESIS)
    b = host('b', [vm('b1', 5.5, 300)])
    small = host('small', [vm('s1', 1.4, 100)])
    big = host('big', [vm('g1', 2, 100)])
    assert migrations(cons.plan_round([small, b], algorithms)) == [
        ('s1', 'small', 'b', 'underload:cpu+memory')]
    assert 'big' in cons.plan_round([big, b], algorithms).kept
    assert migrations(cons.plan_round([big, b], cons.load_algorithms(
        CONF.consolidation, SIMPLE))) == [
        ('g1', 'big', 'b', 'underload:cpu+memory')]


def test_an_overloaded_host_is_relieved_under_its_fill_level_in_one_move(
        conf):
    # a uses 9 of 10 cores. Without headroom, leaving 0.8 is enough (need
    # 1 core): every VM does it alone, the cheapest (a1, 100 MiB) leaves
    # and a stays at 0.8, on the detector's edge. With a fill level of
    # 0.7, 2 cores must leave: of the VMs that do it alone (a2, a3) the
    # cheaper leaves.
    vms = [vm('a1', 1, 100), vm('a2', 2, 300), vm('a3', 6, 400)]
    spare = host('spare', [vm('s1', 4, 100)], mem=4000)
    plan = cons.plan_round([host('a', vms), spare], cons.load_algorithms(
        CONF.consolidation, SIMPLE))
    assert migrations(plan) == [('a1', 'a', 'spare', 'overload:cpu')]
    plan = cons.plan_round([host('a', vms), spare], cons.load_algorithms(
        CONF.consolidation, HYSTERESIS))
    assert migrations(plan) == [('a2', 'a', 'spare', 'overload:cpu')]


def test_when_no_vm_relieves_alone_the_one_relieving_most_leaves(conf):
    # 9.5 of 10 cores, 2.5 over the 0.7 fill level: no VM has that much.
    # The 2-core VMs relieve most; the cheapest of them (x, 100 MiB)
    # leaves, then 0.5 core is over and every VM would do: the cheapest of
    # all (z, 50 MiB). Two moves, where the cheapest first would take
    # three (z, then x, then y).
    vms = [vm('x', 2, 100), vm('y', 2, 200), vm('w', 2, 300),
           vm('v', 2, 400), vm('z', 1.5, 50)]
    spare = host('spare', [], cpus=20, mem=4000)
    spare.cpu_history = spare.mem_history = [0.3, 0.3]
    plan = cons.plan_round([host('a', vms, mem=2000), spare],
                           cons.load_algorithms(CONF.consolidation,
                                                HYSTERESIS))
    assert migrations(plan) == [('x', 'a', 'spare', 'overload:cpu'),
                                ('z', 'a', 'spare', 'overload:cpu')]


def test_placement_counts_cpu_at_its_peak_over_the_window(conf):
    algorithms = cons.load_algorithms(CONF.consolidation, HYSTERESIS)
    # b's VM uses 3 cores now but used 6 two samples ago: with the window
    # of 4 b has 0.7 x 10 - 6 = 1 core left, not 4.
    b1 = vm('b1', 3, 300)
    b1.cpu_history = [2, 6, 4, 3]
    b = host('b', [b1])
    idle = host('idle', [vm('i1', 1.5, 100)])
    assert 'idle' in cons.plan_round([idle, b], algorithms).kept
    latest = cons.load_algorithms(CONF.consolidation,
                                  dict(HYSTERESIS, fill_window=1))
    assert migrations(cons.plan_round([idle, b], latest)) == [
        ('i1', 'idle', 'b', 'underload:cpu+memory')]
    # A VM is weighed by its peak too: quiet now (0.5 core), it used 1.5.
    b1.cpu_history = [3] * 4
    quiet = vm('q1', 0.5, 100)
    quiet.cpu_history = [1.5, 0.5, 0.5, 0.5]
    idle = host('idle', [quiet])
    assert migrations(cons.plan_round([idle, b], algorithms)) == [
        ('q1', 'idle', 'b', 'underload:cpu+memory')]
    b1.cpu_history = [6] * 4
    assert 'idle' in cons.plan_round([idle, b], algorithms).kept


def test_a_host_counts_as_its_vms_peaks_not_its_own_history(conf):
    """A host's cpu, to placement, is the sum of its VMs' peaks: the peak
    of a VM that has left is not held against it, the peaks of VMs that
    never peaked together on it are, and a VM not measured yet counts
    through the host's latest utilisation."""
    algorithms = cons.load_algorithms(CONF.consolidation, HYSTERESIS)
    idle = host('idle', [vm('i1', 1.5, 100)])
    # b ran at 0.6 two samples ago with a VM that has since left; its VM
    # now never used more than 3 cores: 0.7 x 10 - 3 = 4 cores left.
    b = host('b', [vm('b1', 3, 300)])
    b.cpu_history = [0.2, 0.6, 0.4, 0.3]
    assert migrations(cons.plan_round([idle, b], algorithms)) == [
        ('i1', 'idle', 'b', 'underload:cpu+memory')]
    # Two VMs that peaked at 3 cores each, at different times: b's own
    # history never passed 0.35, but placement keeps room for both peaks
    # (1 core left).
    b1, b2 = vm('b1', 0.5, 300), vm('b2', 0.5, 300)
    b1.cpu_history = [3, 0.5, 0.5, 0.5]
    b2.cpu_history = [0.5, 3, 0.5, 0.5]
    b = host('b', [b1, b2])
    b.cpu_history = [0.35, 0.35, 0.1, 0.1]
    assert 'idle' in cons.plan_round([idle, b], algorithms).kept
    # A VM with no samples yet: the host's latest utilisation (0.6) stands
    # for it.
    new = base.VmState(uuid='n1', cpu_history=[], wss_maxavg_mb=300,
                       booked_mb=600)
    b = host('b', [], extra_cpu=6)
    b.vms = [new]
    assert 'idle' in cons.plan_round([idle, b], algorithms).kept


def test_no_memory_headroom_for_booked_memory(conf):
    # b books 800 of 1000 MiB; a's VM books 100 more: 0.9, under the
    # detector's 0.95. By booked memory nothing grows: it fits.
    booked = cons.load_algorithms(CONF.consolidation,
                                  dict(HYSTERESIS, memory_basis='booked'))
    a = host('a', [vm('a1', 0.5, 50, booked=100)])
    b = host('b', [vm('b1', 5, 300, booked=800)])
    b.mem_history = [0.8, 0.8]
    assert migrations(cons.plan_round([a, b], booked)) == [
        ('a1', 'a', 'b', 'underload:cpu+memory')]


def test_a_round_given_its_detection_plans_as_one_that_detects(
        algorithms, monkeypatch):
    # idle is underloaded, a overloaded in memory, b neither: told so, the
    # round plans what it plans when it detects, without asking a detector.
    hosts = [host('idle', [vm('i1', 0.5, 50)]),
             host('a', [vm('a1', 1, 400), vm('a2', 1, 300), vm('a3', 2, 300)]),
             host('b', [vm('b1', 3, 500)])]
    detected = {h.name: cons.detect(h.cpu_history, h.mem_history, algorithms)
                for h in hosts}
    assert detected == {'idle': (['cpu', 'mem'], []), 'a': ([], ['mem']),
                        'b': ([], [])}
    expected = cons.plan_round(copy.deepcopy(hosts), algorithms)
    # (Relieving a, the round asks the overload detectors of a without
    # the VMs it selects: other histories than the hosts'.)
    asked = []
    for name in ('underload_cpu', 'underload_mem', 'overload_cpu',
                 'overload_mem'):
        detector = getattr(algorithms, name)
        method = ('is_underloaded' if name.startswith('under')
                  else 'is_overloaded')
        monkeypatch.setattr(detector, method, lambda history, real=getattr(
            detector, method): asked.append(history) or real(history))
    told = {name: found for name, found in detected.items() if any(found)}
    plan = cons.plan_round(hosts, algorithms, detected=told)
    assert not any(history is h.cpu_history or history is h.mem_history
                   for history in asked for h in hosts)
    assert plan == expected
    assert plan.underloaded == ['idle'] and plan.overloaded == {'a': ['mem']}


@pytest.mark.parametrize('overrides, field, words', [
    ({'overload_cpu': 'nosuch'}, '[consolidation] overload_cpu', 'mhod'),
    ({'overload_cpu_params': '{"otf": '}, '[consolidation] '
     'overload_cpu_params', 'not valid JSON'),
    ({'overload_cpu_params': '[1]'}, '[consolidation] overload_cpu_params',
     'JSON object'),
    ({'overload_cpu_params': {'otf': 0.1}}, 'overload.threshold.otf',
     'unknown parameter'),
    ({'overload_mem': 'threshold', 'overload_mem_params': {'threshold': 2}},
     'overload.threshold.threshold', 'between 0 and 1'),
    ({'placement_params': {'memory_basis': 'booked'}},
     '[consolidation] placement_params.memory_basis', 'memory_basis only'),
    ({'memory_basis': 'rss'}, '[consolidation] memory_basis', "'wss'"),
    ({'underload_require': 'all'}, '[consolidation] underload_require',
     "'both'"),
    ({'overload': 'mad'}, 'overload', 'overload_cpu'),
])
def test_bad_algorithms_name_the_field(conf, overrides, field, words):
    with pytest.raises(exceptions.InvalidParameter) as err:
        cons.load_algorithms(CONF.consolidation, overrides)
    assert "'%s'" % field in str(err.value)
    assert words in str(err.value)


def test_config_file_values_are_used(conf):
    conf.config(group='consolidation', overload_cpu='mad',
                overload_cpu_params='{"threshold": 2.0, "limit": 5}')
    algorithms = cons.load_algorithms(CONF.consolidation)
    assert algorithms.overload_cpu.name == 'mad'
    assert algorithms.overload_cpu.params['threshold'] == 2.0
