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

"""memagg.compute.tiers: each slab's heat from the swap-ins drained from
memagg-swapd, the tier plan every [reservoir] tier_interval from where
each slab is (EXPORT_DESCRIBE), the VMs' weights and remote limits, and
one move_slabs cast per grant; and its place in RemoteMemory's period.
memagg-swapd and memagg-scheduler are stood in for at their clients
(remote_fixtures)."""
from memagg.compute import remote_grants
from memagg.compute import swapd
from memagg.compute import tiers
from memagg.tests.unit.compute.remote_fixtures import (
    FakeScheduler, FakeSwapd, GRANT, GRANT2, MIB, VM, VM2, dom, period,
    result)

SLAB = 64 * MIB
PAGES = SLAB // 4096


def _export(client, grant, slabs, local=()):
    """An export of ``slabs`` slabs, those in ``local`` in the local copy
    only."""
    client.exports[grant] = {
        'grant': grant, 'size': slabs * SLAB, 'slab_size': SLAB,
        'slabs': [{'index': i, 'endpoint': 'tcp://d:7450',
                   'remote_addr': 4096 * (i + 1), 'rkey': 0}
                  for i in range(slabs)],
        'local_slabs': list(local)}


def _grant(uuid, instance):
    return remote_grants.Grant(uuid=uuid, instance_uuid=instance,
                               slab_size_mb=64)


def _swap_ins(slab, count):
    return [(swapd.SWAP_IN, slab * PAGES + i) for i in range(count)]


def _tiers(conf, clock, weights=None):
    client, scheduler = FakeSwapd(), FakeScheduler()
    return tiers.Tiers(conf.conf, 'node-a', client, scheduler,
                       lambda uuid: (weights or {}).get(uuid, 1.0),
                       clock=lambda: clock[0]), client, scheduler


def _moves(scheduler):
    return [c[1:5] for c in scheduler.calls if c[0] == 'move_slabs']


def test_heat_counts_swap_ins_per_slab_and_remembers_the_last():
    heat = tiers.SlabHeat()
    heat.feed(GRANT, 64, _swap_ins(2, 3) + [(swapd.SWAP_OUT, 5)] +
              _swap_ins(0, 1))

    assert heat.slab(GRANT, 2, 7) == tiers.tiers_base.Slab(7, 3, 3.0)
    assert heat.slab(GRANT, 0, 0).last_seen == 4.0
    assert heat.slab(GRANT, 1, 1).heat == 0
    heat.restart({GRANT})
    assert heat.slab(GRANT, 2, 7) == tiers.tiers_base.Slab(7, 0, 3.0)
    heat.restart(set())
    assert heat.slab(GRANT, 2, 7).last_seen == 0.0


def test_a_hot_local_slab_takes_the_place_of_a_cold_one(conf, clock):
    planner, client, scheduler = _tiers(conf, clock)
    # Two slabs on donors (0 cold, 1 warm), two local (2 hot, 3 cold);
    # the VM's limit allows 2 slabs on donors.
    _export(client, GRANT, 4, local=[2, 3])
    grant = _grant(GRANT, VM)
    planner.feed(grant, _swap_ins(1, 2) + _swap_ins(2, 9))
    assert not planner.due()
    clock[0] += 30
    assert planner.due()

    plan = planner.run(None, {VM: [grant]}, {VM: 128})

    assert plan.allocations == {VM: 2.0}
    assert _moves(scheduler) == [(GRANT, 'node-a', [0], [2])]
    assert not planner.due()
    # The heat starts again: nothing hotter on L2 than on L1 now.
    clock[0] += 30
    scheduler.calls.clear()
    planner.run(None, {VM: [grant]}, {VM: 128})
    assert _moves(scheduler) == []


def test_a_stale_slab_stays_on_its_donor(conf, clock):
    planner, client, scheduler = _tiers(conf, clock)
    # Slab 0, the coldest on donors, is stale: its local copy missed
    # writes, so the next coldest makes room for the hot local slab.
    _export(client, GRANT, 4, local=[2, 3])
    client.exports[GRANT]['stale_slabs'] = [0]
    grant = _grant(GRANT, VM)
    planner.feed(grant, _swap_ins(1, 2) + _swap_ins(2, 9))

    planner.run(None, {VM: [grant]}, {VM: 128})

    assert _moves(scheduler) == [(GRANT, 'node-a', [1], [2])]


def test_shares_follow_the_weights_within_the_host_bound(conf, clock):
    grants = {VM: [_grant(GRANT, VM)], VM2: [_grant(GRANT2, VM2)]}

    # Each may hold 4 slabs, the host 4 in all: VM's share 3, VM2's 1
    # (it holds 2).
    conf.config(tier_l1_capacity_mb=256, group='reservoir')
    planner, client, scheduler = _tiers(conf, clock,
                                        weights={VM: 3.0, VM2: 1.0})
    _export(client, GRANT, 2)
    _export(client, GRANT2, 2)
    plan = planner.run(None, grants, {VM: 256, VM2: 256})

    assert plan.allocations == {VM: 3.0, VM2: 1.0}
    # What the report carries of them, MiB.
    assert planner.shares_mb == {VM: 192, VM2: 64}
    assert _moves(scheduler) == [(GRANT2, 'node-a', [0], [])]
    # Without a host bound, each VM keeps its own limit.
    conf.config(tier_l1_capacity_mb=0, group='reservoir')
    planner, client, scheduler = _tiers(conf, clock,
                                        weights={VM: 3.0, VM2: 1.0})
    _export(client, GRANT, 2)
    _export(client, GRANT2, 2)
    assert planner.run(None, grants, {VM: 256, VM2: 256}).allocations == {
        VM: 4.0, VM2: 4.0}
    assert _moves(scheduler) == []


def test_an_export_memagg_swapd_does_not_describe_is_left_out(conf, clock):
    planner, client, scheduler = _tiers(conf, clock)
    _export(client, GRANT, 2)
    client.errors['export_describe'] = swapd.SwapdError('ENOENT', 'grant')

    plan = planner.run(None, {VM: [_grant(GRANT, VM)]}, {VM: 0})

    assert plan.allocations == {VM: 0.0} and _moves(scheduler) == []
    client.down = True
    assert planner.run(None, {VM: [_grant(GRANT, VM)]}, {VM: 0}) is None


def test_remote_memory_plans_tiers_each_interval(lmc, clock):
    # 20 slabs on donors; the VM's limit, its cap (half its 2048 MiB),
    # holds 16.
    _export(lmc.client, GRANT, 20)
    lmc.client.exports[GRANT]['local'] = remote_grants.local_copy_path(
        lmc.conf.swapd.state_dir, VM, GRANT)
    lmc.recover()
    lmc.client.events[GRANT] = _swap_ins(0, 4)
    calm = period(0, result(VM, 900, 1000, shortage=False))

    def one_period():
        lmc.ghost_periods([dom(VM)])
        lmc.plan_period(calm, [dom(VM)])
        lmc.act(None)

    one_period()
    assert _moves(lmc.scheduler_api) == []
    clock[0] += lmc.conf.reservoir.tier_interval
    one_period()
    # The coldest 4 go to the local copy; slab 0 served swap-ins.
    assert _moves(lmc.scheduler_api) == [(GRANT, 'node-a', [1, 2, 3, 4],
                                          [])]
    assert not lmc.tiers.due()
