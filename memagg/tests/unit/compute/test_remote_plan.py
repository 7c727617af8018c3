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

"""The plan of a period of remote memory (memagg/compute/remote_plan.py)
on hand-made periods, with the fixed and the tlp remote budgets. Its
inputs are made with remote_fixtures.py.
"""
from memagg.compute import remote_grants
from memagg.compute import remote_plan
from memagg.drivers.remote_budget import base as budget_base
from memagg.drivers.remote_budget import tlp
from memagg.tests.unit.compute import remote_fixtures as helpers

VM = helpers.VM
VM2 = helpers.VM2
GRANT = helpers.GRANT
MIB = helpers.MIB
result = helpers.result
dom = helpers.dom
donor = helpers.donor
period = helpers.period


# -- plan_period: hand-made periods ----------------------------------------

def test_lendable_is_the_reservoir_less_the_reserve_when_no_vm_is_short():
    plan = remote_plan.plan_period(
        period(3000, result(VM, 900, 1000, shortage=False)), [dom(VM)], {},
        donor(), reserve_mb=1024, max_ratio=0.5)
    assert (plan.lendable_mb, plan.allocate, plan.reclaim_mb) == (1976, [], 0)


def test_lendable_is_capped_by_swapd_capacity_and_never_negative():
    calm = period(3000, result(VM, 900, 1000, shortage=False))
    assert remote_plan.plan_period(calm, [dom(VM)], {}, donor(capacity_mb=512),
                                   1024, 0.5).lendable_mb == 512
    assert remote_plan.plan_period(period(500), [], {}, donor(), 1024,
                                   0.5).lendable_mb == 0


def test_a_short_vm_lends_nothing_and_asks_for_its_cap():
    # WSS 1500 above the 1200 the policy could give: the host is spent.
    plan = remote_plan.plan_period(
        period(3000, result(VM, 1500, 1200), result(VM2, 500, 600,
                                                    shortage=False)),
        [dom(VM, booked=2048), dom(VM2)], {}, donor(used_mb=256), 1024, 0.5)
    assert plan.lendable_mb == 0
    assert plan.allocate == [(VM, 1024)]
    # Local needs first: what it lends comes back.
    assert plan.reclaim_mb == 256


def test_a_vm_the_host_can_still_grow_or_an_unmanaged_one_is_not_short():
    plan = remote_plan.plan_period(
        period(3000, result(VM, 1500, 1500),
               result(VM2, 1500, 1000, managed=False)),
        [dom(VM), dom(VM2)], {}, donor(), 1024, 0.5)
    assert plan.allocate == [] and plan.lendable_mb == 1976


def test_a_short_vm_with_a_grant_asks_for_nothing_more():
    grants = {VM: remote_grants.Grant(uuid=GRANT, instance_uuid=VM)}
    plan = remote_plan.plan_period(period(0, result(VM, 1500, 1200)),
                                   [dom(VM)], grants, donor(), 1024, 0.5)
    assert plan.allocate == []


def test_auto_grant_off_or_a_zero_ratio_asks_for_nothing():
    short = period(0, result(VM, 1500, 1200))
    assert remote_plan.plan_period(short, [dom(VM)], {}, donor(), 1024, 0.5,
                                   auto_grant=False).allocate == []
    assert remote_plan.plan_period(short, [dom(VM)], {}, donor(), 1024,
                                   0.0).allocate == []


def test_swapd_lending_more_than_lendable_asks_for_the_excess():
    plan = remote_plan.plan_period(
        period(1024 + 300, result(VM, 900, 1000, shortage=False)),
        [dom(VM)], {}, donor(used_mb=512), 1024, 0.5)
    assert (plan.lendable_mb, plan.reclaim_mb) == (300, 212)
    # Part of a MiB in use counts as a whole one.
    plan = remote_plan.plan_period(period(0), [], {},
                                   {'capacity': MIB, 'used': 1}, 1024, 0.5)
    assert plan.reclaim_mb == 1


def test_without_swapd_nothing_is_lent_or_reclaimed():
    plan = remote_plan.plan_period(period(5000, result(VM, 1500, 1200)),
                                   [dom(VM)], {}, None, 1024, 0.5)
    assert (plan.lendable_mb, plan.reclaim_mb) == (0, 0)


# -- plan_period with the tlp remote budget (P = 2 %, slack threshold 0.25)

def test_tlp_gives_a_short_vm_without_remote_memory_its_first_step():
    # Cap 0.5 x 2048 = 1024; the host holds nothing and may ask up to the
    # cap: budget 1024. New to the policy, the VM starts at 0 and, short,
    # grows by 2 % of 1024 = 20.48 -> 20 MiB, which it asks for.
    plan = remote_plan.plan_period(period(0, result(VM, 1500, 1200)),
                                   [dom(VM, booked=2048)], {}, donor(), 1024,
                                   0.5, policy=tlp.TlpBudget())
    assert plan.allocate == [(VM, 20)]
    assert (plan.limits, plan.excess_mb) == ({VM: 20}, 0)


def test_tlp_tops_up_a_vm_with_a_grant_where_fixed_does_not():
    grants = {VM: remote_grants.Grant(uuid=GRANT, instance_uuid=VM,
                                      remote_mb=20)}
    use = {VM: remote_plan.RemoteUse(held_mb=20, limit_mb=20)}
    short = period(0, result(VM, 1500, 1200))
    # Budget 20 held + (1024 - 20) still askable = 1024; 20 + 20.48 = 40:
    # it asks for the 20 beyond what it holds.
    plan = remote_plan.plan_period(short, [dom(VM)], grants, donor(), 1024,
                                   0.5, policy=tlp.TlpBudget(), use=use)
    assert (plan.allocate, plan.limits) == ([(VM, 20)], {VM: 40})
    # fixed: the cap, asked once; a VM with a grant asks nothing more.
    plan = remote_plan.plan_period(short, [dom(VM)], grants, donor(), 1024,
                                   0.5, use=use)
    assert (plan.allocate, plan.limits) == ([], {VM: 1024})


def test_tlp_without_auto_grant_scales_the_limits_to_what_is_held():
    # May not ask: the budget is the 128 held. Short, 128 + 2 % of 128 =
    # 130.56 -> 130; excess 2; scaled back to 128 (its use); nothing asked.
    plan = remote_plan.plan_period(
        period(0, result(VM, 1500, 1200)), [dom(VM)], {}, donor(), 1024, 0.5,
        auto_grant=False, policy=tlp.TlpBudget(),
        use={VM: remote_plan.RemoteUse(held_mb=128, limit_mb=128)})
    assert (plan.allocate, plan.limits, plan.excess_mb) == ([], {VM: 128}, 2)


def test_the_budget_is_what_is_held_plus_what_may_still_be_asked():
    caps = {VM: 1024, VM2: 512}
    # VM holds 100 of its 1024, VM2 600, above its cap of 512 (the cap was
    # lowered): 700 held + 924 + 0 still askable.
    held = {VM: 100, VM2: 600}
    assert budget_base.remote_budget_mb(caps, held, may_ask=True) == 1624
    assert budget_base.remote_budget_mb(caps, held, may_ask=False) == 700
