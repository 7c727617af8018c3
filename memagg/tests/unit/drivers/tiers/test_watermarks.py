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

"""The watermarks tier policy: shares by weight, demotions above the high
watermark from the VM most over its allocation, promotions below the low
one into the VM most under it, hot L2 slabs in place of much colder L1
ones, pinned slabs left where they are, and at most a batch of moves per
interval."""
import pytest

from memagg.drivers.tiers import base
from memagg.drivers.tiers import watermarks


def _policy(high=1.0, low=0.75, batch=8, ratio=2.0):
    return watermarks.Watermarks(base.TierParams(
        tier_high_watermark=high, tier_low_watermark=low,
        tier_batch_slabs=batch, tier_exchange_ratio=ratio))


def _slabs(*heats, start=0):
    return tuple(base.Slab(index=start + i, heat=h)
                 for i, h in enumerate(heats))


def _moves(plan):
    return ([(m.uuid, m.index) for m in plan.demote],
            [(m.uuid, m.index) for m in plan.promote])


def test_allocations_are_weighted_shares_of_the_capacity():
    plan = _policy().plan([base.VmTiers('a', 3.0), base.VmTiers('b', 1.0)],
                          capacity_slabs=8)

    assert plan.allocations == {'a': 6.0, 'b': 2.0}
    assert _moves(plan) == ([], [])


def test_a_vm_never_gets_more_than_its_limit_the_others_get_it():
    vms = [base.VmTiers('a', 1.0, limit=2), base.VmTiers('b', 1.0),
           base.VmTiers('c', 2.0, limit=10)]

    # 12 slabs: a is held to 2; b and c share 10 by weight (3.3, 6.7).
    shares = _policy().plan(vms, capacity_slabs=12).allocations

    assert shares['a'] == 2.0
    assert round(shares['b'], 3) == 3.333 and round(shares['c'], 3) == 6.667
    assert base.allocations([base.VmTiers('a', 1.0, limit=1)], 8) == {
        'a': 1.0}


def test_above_the_high_watermark_the_coldest_slabs_go_from_the_most_over():
    # Shares 4 and 4; a holds 7 (3 over), b holds 5 (1 over).
    vms = [base.VmTiers('a', 1.0, l1=_slabs(5, 0, 9, 1, 7, 2, 8)),
           base.VmTiers('b', 1.0, l1=_slabs(4, 3, 0, 6, 2))]

    plan = _policy().plan(vms, capacity_slabs=8)

    # a twice (3 -> 1 over), then both are 1 over (ties go by uuid): a's
    # coldest in order (heat 0, 1, then 2), b's (heat 0).
    demoted, promoted = _moves(plan)
    assert demoted == [('a', 1), ('a', 3), ('b', 2), ('a', 5)]
    assert promoted == []


def test_recency_breaks_ties_of_heat():
    vms = [base.VmTiers('a', 1.0, l1=(
        base.Slab(0, heat=0, last_seen=20.0),
        base.Slab(1, heat=0, last_seen=10.0)))]

    plan = _policy().plan(vms, capacity_slabs=1)

    assert _moves(plan) == ([('a', 1)], [])


def test_below_the_low_watermark_the_hottest_l2_slabs_come_back():
    # a's share is 8 (low 6), it holds 2 on L1; b is at its share.
    vms = [base.VmTiers('a', 1.0, l1=_slabs(1, 1),
                        l2=_slabs(0, 9, 3, 5, start=2)),
           base.VmTiers('b', 1.0, l1=_slabs(*[1] * 8, start=0))]

    plan = _policy().plan(vms, capacity_slabs=16)

    # Hottest first, never a slab without swap-ins.
    assert _moves(plan) == ([], [('a', 3), ('a', 5), ('a', 4)])


def test_promotions_go_to_the_vm_most_under_its_allocation_first():
    vms = [base.VmTiers('a', 1.0, l1=_slabs(1, 1, 1),
                        l2=_slabs(5, 5, 5, start=3)),
           base.VmTiers('b', 1.0, l1=_slabs(1),
                        l2=_slabs(5, 5, 5, start=1))]

    # Shares 3 and 3 (low 2): b starves, a does not. The 2 L1 slabs free
    # on the host go to b; a's hot L2 slabs then take the place of its
    # cold L1 ones.
    plan = _policy(batch=4).plan(vms, capacity_slabs=6)

    demoted, promoted = _moves(plan)
    assert promoted[:2] == [('b', 1), ('b', 2)]
    assert demoted == [('a', 0)] and promoted[2:] == [('a', 3)]


def test_a_hot_l2_slab_takes_the_place_of_a_colder_l1_one():
    # At its share: its hot set (heat 9) is half on L2.
    vms = [base.VmTiers('a', 1.0, l1=_slabs(9, 0, 9, 1),
                        l2=_slabs(9, 0, 9, 0, start=4))]

    plan = _policy().plan(vms, capacity_slabs=4)

    assert _moves(plan) == ([('a', 1), ('a', 3)], [('a', 4), ('a', 6)])


def test_slabs_of_about_the_same_heat_stay_where_they_are():
    # Ratio 2: an L2 slab takes an L1 slab's place only with at least
    # twice its swap-ins plus one.
    vms = [base.VmTiers('a', 1.0, l1=_slabs(4, 1, 0),
                        l2=_slabs(9, 3, 1, start=3))]

    plan = _policy().plan(vms, capacity_slabs=3)

    # 9 >= 2 * (0 + 1) takes slab 2's place; then 3 >= 2 * (1 + 1) does
    # not quite; 1 against 4 never.
    assert _moves(plan) == ([('a', 2)], [('a', 3)])
    assert _moves(_policy(ratio=1.0).plan(vms, capacity_slabs=3)) == (
        [('a', 2), ('a', 1)], [('a', 3), ('a', 4)])


def test_a_pinned_slab_never_moves():
    # Slab 0 (coldest, L1) and slab 5 (hottest, L2) are pinned: their
    # local copies missed writes.
    vms = [base.VmTiers('a', 1.0, l1=(base.Slab(0, heat=0, pinned=True),)
                        + _slabs(2, 3, start=1),
                        l2=(base.Slab(5, heat=50, pinned=True),)
                        + _slabs(20, start=6))]

    # Over its share of 2: slab 1, not 0, goes; then slab 6, not 5,
    # takes the place of slab 2.
    plan = _policy().plan(vms, capacity_slabs=2)

    assert _moves(plan) == ([('a', 1), ('a', 2)], [('a', 6)])
    # A VM whose L1 slabs are all pinned demotes nothing.
    pinned = [base.VmTiers('a', 1.0, l1=(base.Slab(0, pinned=True),
                                         base.Slab(1, pinned=True)))]
    assert _moves(_policy().plan(pinned, capacity_slabs=0)) == ([], [])


def test_the_batch_bounds_the_moves_of_an_interval():
    vms = [base.VmTiers('a', 1.0, l1=_slabs(*range(20)))]

    plan = _policy(batch=3).plan(vms, capacity_slabs=4)

    assert _moves(plan) == ([('a', 0), ('a', 1), ('a', 2)], [])


def test_an_exchange_is_never_cut_in_half_by_the_batch():
    vms = [base.VmTiers('a', 1.0, l1=_slabs(0, 0), l2=_slabs(5, start=2))]

    assert _moves(_policy(batch=1).plan(vms, capacity_slabs=2)) == ([], [])


def test_no_capacity_demotes_everything_in_batches():
    vms = [base.VmTiers('a', 2.0, l1=_slabs(1, 2)),
           base.VmTiers('b', 1.0, l1=_slabs(3))]

    plan = _policy().plan(vms, capacity_slabs=0)

    assert plan.allocations == {'a': 0.0, 'b': 0.0}
    assert sorted(_moves(plan)[0]) == [('a', 0), ('a', 1), ('b', 0)]


def test_no_vms_plan_nothing():
    assert _policy().plan([], capacity_slabs=10) == base.Plan(allocations={})


@pytest.mark.parametrize('vms, capacity, message', [
    ([base.VmTiers('a', 1.0), base.VmTiers('a', 2.0)], 4, 'once'),
    ([base.VmTiers('a', 0.0)], 4, 'weight of VM a is 0.0'),
    ([base.VmTiers('a', float('nan'))], 4, 'not a positive number'),
    ([base.VmTiers('a', 1.0, l1=_slabs(1), l2=_slabs(1))], 4,
     'slab on both tiers'),
    ([base.VmTiers('a', 1.0)], -1, 'capacity_slabs must not be negative'),
    ([base.VmTiers('a', 1.0, limit=-1)], 4, 'limit of VM a is -1'),
])
def test_bad_input_is_refused_saying_what(vms, capacity, message):
    with pytest.raises(ValueError, match=message):
        _policy().plan(vms, capacity)
