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

"""The round's views of the hosts: the quick checks that spare placement
work, and never change its answer."""
import random

import pytest

from memagg.conf import CONF
from memagg.scheduler import consolidation as cons
from memagg.scheduler import round_budget
from memagg.scheduler import round_views
from memagg.tests.unit.scheduler.round_fixtures import (
    HYSTERESIS, SIMPLE, host, migrations, vm)


@pytest.mark.parametrize('seed', range(20))
def test_what_spares_placement_work_never_changes_its_answer(conf, seed):
    # Random clusters: whenever the round keeps an underloaded host without
    # asking placement (why_not), placement could not have emptied it; and
    # placement over the hosts the round offers it (targets) answers as
    # over every other active host; whether placement's thresholds are
    # above or below the rooms.
    rng = random.Random(seed)
    algorithms = cons.load_algorithms(CONF.consolidation, dict(
        HYSTERESIS, max_migrations_per_host_hour=rng.choice([0, 2, 4]),
        placement_params={'cpu_threshold': rng.choice([0.6, 0.8, 1.0]),
                          'ram_threshold': rng.choice([0.7, 0.95])}))
    hosts = []
    for h in range(12):
        vms = []
        for v in range(rng.randint(0, 5)):
            demand = vm('h%d-v%d' % (h, v), rng.uniform(0.2, 3),
                        rng.uniform(50, 500))
            demand.cpu_history = [rng.uniform(0.2, 3) for _ in range(4)]
            vms.append(demand)
        state = host('h%d' % h, vms, cpus=rng.choice([6, 12]),
                     mem=rng.choice([1000, 2000]))
        state.cpu_history = [rng.uniform(0.05, 0.8) for _ in range(4)]
        hosts.append(state)
    moves = {h.name: rng.randint(0, 3) for h in hosts}
    views = round_views.Views(hosts, algorithms, round_budget.Budget(
        algorithms.controls, round_budget.Recent(host_moves=moves)))
    for state in hosts:
        if not state.vms:
            continue
        others = [views.hosts[h.name] for h in hosts if h is not state]
        full = views.place(state.vms, others)
        if views.why_not(state.name, state.vms):
            assert full.unplaced
        else:
            offered = views.place(state.vms,
                                  views.targets(state.name, state.vms))
            assert offered.placements == full.placements
            assert set(offered.unplaced) == set(full.unplaced)


def test_the_quick_checks_stop_where_placement_stops(conf, monkeypatch):
    # Rooms let a host fill to its overload threshold, 0.95 of its cpu;
    # best fit decreasing stops at its own cpu_threshold, 0.8. busy uses
    # 0.8 of its cores: it has room for idle's VM under 0.95, none under
    # 0.8, so the round keeps idle without asking placement. (A VM's cpu
    # counts as its peak of 2 samples: with a window of 1 placement
    # averages samples and the checks can count none as sure.)
    algorithms = cons.load_algorithms(CONF.consolidation, dict(
        SIMPLE, overload_cpu_params={'threshold': 0.95}, fill_window=2))
    idle = host('idle', [vm('i1', 1.0, 50)])
    busy = host('busy', [vm('b1', 8.0, 500)])
    asked = []
    place = algorithms.placement.place
    monkeypatch.setattr(algorithms.placement, 'place',
                        lambda *args: asked.append(args) or place(*args))
    plan = cons.plan_round([idle, busy], algorithms)
    assert plan.underloaded == ['idle']
    assert plan.actions == [] and asked == []
    assert plan.kept['idle'] == (
        'VM i1 fits on no other active host: cpu: none has 1.0 cpu and '
        '50.0 MiB (wss) left under its fill levels')
    # With placement allowed to 0.95 as well, it is asked, and moves i1.
    algorithms = cons.load_algorithms(CONF.consolidation, dict(
        SIMPLE, overload_cpu_params={'threshold': 0.95}, fill_window=2,
        placement_params={'cpu_threshold': 0.95}))
    plan = cons.plan_round([idle, busy], algorithms)
    assert migrations(plan) == [('i1', 'idle', 'busy', 'underload:cpu+memory')]


def test_the_hosts_that_can_take_the_largest_vms_must_hold_them_all(
        conf, monkeypatch):
    # idle's VMs need 0.9, 0.9 and 0.1 cores at their peaks, 1.9 in all:
    # a has 1.2 left under 0.8, b and c 0.6 each. All of them have 2.4,
    # but the two VMs of 0.9 go only to a, which holds one: the round
    # keeps idle without asking placement, which would place one of them
    # on a and not the other.
    algorithms = cons.load_algorithms(CONF.consolidation, dict(
        SIMPLE, fill_window=2))
    idle = host('idle', [vm('i1', 0.9, 50), vm('i2', 0.9, 50),
                         vm('i3', 0.1, 50)])
    others = [host('a', [vm('a1', 6.8, 500)]), host('b', [vm('b1', 7.4, 500)]),
              host('c', [vm('c1', 7.4, 500)])]
    assert len(algorithms.placement.place(others, idle.vms).unplaced) == 1
    asked = []
    place = algorithms.placement.place
    monkeypatch.setattr(algorithms.placement, 'place',
                        lambda *args: asked.append(args) or place(*args))
    plan = cons.plan_round([idle] + others, algorithms)
    assert plan.underloaded == ['idle']
    assert plan.actions == [] and asked == []
    assert plan.kept['idle'] == (
        'its VMs that need 0.9 cpu or more need 1.8 cpu in all (at their '
        'peaks); the other active hosts with that much cpu left have 1.2 '
        'left under their fill levels')
