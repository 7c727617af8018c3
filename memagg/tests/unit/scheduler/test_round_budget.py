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

"""What a round may move: the cool-down of a VM, the caps of a round and
of a host's hour."""
from memagg.conf import CONF
from memagg.scheduler import consolidation as cons
from memagg.scheduler import round_budget
from memagg.tests.unit.scheduler.round_fixtures import (
    SIMPLE, host, migrations, vm)


def test_a_cooling_vm_is_not_selected(conf):
    # a (9 of 10 cores) sheds one VM: a1, the cheapest, unless it moved
    # less than the cool-down (600 s) ago; then a2.
    algorithms = cons.load_algorithms(CONF.consolidation, dict(
        SIMPLE, migration_cooldown=600))
    vms = [vm('a1', 3, 100), vm('a2', 3, 200), vm('a3', 3, 300)]
    spare = host('spare', [vm('s1', 4, 100)], mem=4000)

    def moved(**vms):
        return round_budget.Recent(now=10000.0, moved_at=vms)

    plan = cons.plan_round([host('a', vms), spare], algorithms)
    assert migrations(plan) == [('a1', 'a', 'spare', 'overload:cpu')]
    plan = cons.plan_round([host('a', vms), spare], algorithms,
                           moved(a1=9500.0))
    assert migrations(plan) == [('a2', 'a', 'spare', 'overload:cpu')]
    assert plan.complete
    # 600 s after its move it may go again.
    plan = cons.plan_round([host('a', vms), spare], algorithms,
                           moved(a1=9400.0))
    assert migrations(plan) == [('a1', 'a', 'spare', 'overload:cpu')]
    # All cooling: a stays overloaded, and the plan says why.
    plan = cons.plan_round([host('a', vms), spare], algorithms,
                           moved(a1=9500.0, a2=9900.0, a3=9999.0))
    assert plan.actions == [] and plan.overloaded == {'a': ['cpu']}
    assert plan.deferred == {'a': '3 of its VMs migrated less than '
                                  'migration_cooldown (600 s) ago; the '
                                  'others do not relieve it'}
    assert not plan.complete
    # A cool-down of 0 holds nothing back.
    plan = cons.plan_round([host('a', vms), spare], cons.load_algorithms(
        CONF.consolidation, dict(SIMPLE, migration_cooldown=0)),
        moved(a1=9999.0))
    assert migrations(plan) == [('a1', 'a', 'spare', 'overload:cpu')]


def test_a_cooling_vm_keeps_its_underloaded_host_on(conf):
    algorithms = cons.load_algorithms(CONF.consolidation, dict(
        SIMPLE, migration_cooldown=600))
    a = host('a', [vm('a1', 0.5, 50), vm('a2', 0.5, 50)])
    b = host('b', [vm('b1', 5, 500)])
    plan = cons.plan_round([a, b], algorithms, round_budget.Recent(
        now=1000.0, moved_at={'a2': 700.0}))
    assert plan.actions == []
    assert plan.kept == {'a': 'VM a2 migrated less than migration_cooldown '
                              '(600 s) ago: 300 s to go'}
    plan = cons.plan_round([a, b], algorithms, round_budget.Recent(
        now=1300.0, moved_at={'a2': 700.0}))
    assert [x.action_type for x in plan.actions] == [
        'migrate', 'migrate', 'power_off']


def test_the_round_cap_stops_the_plan_most_loaded_first(conf):
    # Three hosts over 0.8 cpu, one VM each to shed (the busier of two
    # equally cheap ones); two migrations allowed: the two most loaded (c,
    # then a) are relieved, b waits.
    algorithms = cons.load_algorithms(CONF.consolidation, dict(
        SIMPLE, max_migrations_per_round=2))
    hosts = [host('a', [vm('a1', 4, 100), vm('a2', 5, 100)]),
             host('b', [vm('b1', 4, 100), vm('b2', 4.5, 100)]),
             host('c', [vm('c1', 4, 100), vm('c2', 5.5, 100)]),
             host('spare', [], cpus=40, mem=4000)]
    hosts[-1].cpu_history = hosts[-1].mem_history = [0.3, 0.3]
    plan = cons.plan_round(hosts, algorithms)
    assert [m[:2] for m in migrations(plan)] == [('c2', 'c'), ('a2', 'a')]
    assert plan.deferred == {
        'b': 'the round planned its max_migrations_per_round (2)'}
    # Emptying a host whole must fit in what the round has left.
    idle = host('idle', [vm('i1', 0.05, 50), vm('i2', 0.05, 50)], cpus=1)
    plan = cons.plan_round(hosts + [idle], algorithms)
    assert plan.kept['idle'] == ('emptying it takes 2 migrations; the round '
                                 'may plan 0 more (max_migrations_per_round '
                                 '2)')
    assert len(migrations(cons.plan_round(hosts, cons.load_algorithms(
        CONF.consolidation, SIMPLE)))) == 3


def test_the_hourly_cap_of_each_host(conf):
    algorithms = cons.load_algorithms(CONF.consolidation, dict(
        SIMPLE, max_migrations_per_host_hour=3))
    vms = [vm('a1', 3, 100), vm('a2', 3, 200), vm('a3', 3, 300)]
    near = host('near', [vm('n1', 4, 100)], mem=4000)
    far = host('far', [vm('f1', 3, 100)], mem=4000)

    def plan(**moves):
        return cons.plan_round([host('a', vms), near, far], algorithms,
                               round_budget.Recent(host_moves=moves))

    # near (the fullest that fits) takes a1; at its cap it does not, and
    # far does; with both at their cap a1 stays (a, shedding, takes none
    # either), and so does it with a at its own cap.
    assert migrations(plan()) == [('a1', 'a', 'near', 'overload:cpu')]
    assert migrations(plan(near=3)) == [('a1', 'a', 'far', 'overload:cpu')]
    capped = plan(near=3, far=5)
    assert capped.actions == []
    assert capped.unplaced['a1'].endswith(
        '(3 hosts may receive no more VMs this round)')
    capped = plan(a=3)
    assert capped.actions == []
    assert capped.deferred == {'a': 'it took part in its '
                                    'max_migrations_per_host_hour (3) '
                                    'within the hour'}
    # A host being emptied is not held back by its own cap, its
    # destinations are.
    idle = host('idle', [vm('i1', 0.2, 50), vm('i2', 0.2, 50)])
    emptied = cons.plan_round([idle, near], algorithms,
                              round_budget.Recent(host_moves={'idle': 9}))
    assert [m[0] for m in migrations(emptied)] == ['i1', 'i2']
    kept = cons.plan_round([idle, near], algorithms,
                           round_budget.Recent(host_moves={'near': 2}))
    assert kept.kept['idle'] == (
        'emptying it takes 2 migrations; the other active hosts may take '
        'part in 1 more this hour (max_migrations_per_host_hour 3)')
