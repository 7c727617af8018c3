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

"""cmms (§2.1): guarantee up to the booked size first, borrowers give back
first, the rest shared equally or in proportion to unmet demand."""
from memagg.drivers.local import base
from memagg.drivers.local import cmms


def _vm(uuid, m_init, m_cur, need):
    return base.VmMemory(uuid=uuid, m_init_mb=m_init, m_cur_mb=m_cur,
                         wss_mb=need, wss_maxavg_mb=need, max_mb=4096)


def _policy(share='equal'):
    return cmms.CmmsPolicy(base.PolicyParams(share_policy=share))


def test_a_lender_gets_its_booking_back_from_a_borrower_first():
    # Budget 2048 all in use. A lent 512 and needs its 1024 back; B borrows
    # 512 and still wants it. B goes back to 1024; A's guarantee of
    # 1024 - 512 = 512 comes first; nothing is left for B's extra.
    vms = [_vm('a', 1024, 512, 1024), _vm('b', 1024, 1536, 1536)]

    result = _policy().compute(vms, 2048)

    assert result.targets == {'a': 1024, 'b': 1024}
    assert result.reservoir_mb == 0


def test_guarantee_before_extra_and_extra_reshared():
    # Budget 2304 = 512 + 1024 + 768, none free. B and C borrow 512 and
    # 256 over their 512 bookings: pool = 768. A's guarantee 512 -> 256
    # left, shared equally among B (wants 1024 - 512 = 512 more) and C
    # (768 - 512 = 256 more): 128 each.
    vms = [_vm('a', 1024, 512, 1024), _vm('b', 512, 1024, 1024),
           _vm('c', 512, 768, 768)]

    result = _policy().compute(vms, 2304)

    assert result.targets == {'a': 1024, 'b': 640, 'c': 640}
    assert result.reservoir_mb == 0


def test_a_short_pool_shares_the_guarantees_in_proportion():
    # Budget 1324, 1024 in use: pool 300 for guarantees of 512 (A) and 256
    # (B): A 300 * 512 / 768 = 200, B 100.
    vms = [_vm('a', 1024, 512, 1024), _vm('b', 1024, 512, 768)]

    assert _policy().compute(vms, 1324).targets == {'a': 712, 'b': 612}


def _extra_case(pool):
    # Three VMs at their 1024 booking; B wants 200 more, C 400 more; the
    # host has ``pool`` free.
    vms = [_vm('a', 1024, 1024, 1024), _vm('b', 1024, 1024, 1224),
           _vm('c', 1024, 1024, 1424)]
    return vms, 3 * 1024 + pool


def test_equal_share_gives_the_same_to_each():
    vms, budget = _extra_case(300)

    # 300 / 2 = 150 each.
    assert _policy('equal').compute(vms, budget).targets == {
        'a': 1024, 'b': 1174, 'c': 1174}


def test_equal_share_passes_on_what_a_small_demand_leaves():
    vms, budget = _extra_case(500)

    # 250 each, but B wants only 200: its 50 goes to C (300).
    assert _policy('equal').compute(vms, budget).targets == {
        'a': 1024, 'b': 1224, 'c': 1324}


def test_proportional_share_follows_unmet_demand():
    vms, budget = _extra_case(300)

    # 300 * 200/600 = 100 and 300 * 400/600 = 200.
    assert _policy('proportional').compute(vms, budget).targets == {
        'a': 1024, 'b': 1124, 'c': 1224}


def test_proportional_share_rounds_to_whole_mib():
    vms, budget = _extra_case(500)

    # 500 * 200/600 = 166.67 and 333.33: 166 and 333, the last MiB to the
    # larger fraction (B).
    result = _policy('proportional').compute(vms, budget)

    assert result.targets == {'a': 1024, 'b': 1191, 'c': 1357}
    assert result.reservoir_mb == 0


def test_shrinking_fills_the_reservoir_at_the_step_cap():
    # A needs 1000 of its 2048: the move is capped at 512 this period.
    vms = [_vm('a', 2048, 2048, 1000)]

    result = _policy().compute(vms, 4096)

    assert result.targets == {'a': 1536}
    assert result.reservoir_mb == 4096 - 1536


def test_everyone_satisfied_keeps_the_rest_in_the_reservoir():
    # Free 1000; A wants 100 more than its booking, B is fine.
    vms = [_vm('a', 1024, 1024, 1124), _vm('b', 1024, 1024, 1024)]

    result = _policy().compute(vms, 3048)

    assert result.targets == {'a': 1124, 'b': 1024}
    assert result.reservoir_mb == 900
