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

"""The tlp remote budget on hand-worked periods: grow, shrink, cap, floor at
the VM's use, rescale and the excess over the node's budget.

Unless a test says otherwise the parameters are the defaults: P = 2 %,
slack threshold 0.25. Sizes are MiB.
"""
import pytest

from memagg.drivers.remote_budget import base
from memagg.drivers.remote_budget import tlp


Vm = base.VmRemote


def tlp_limits(vms, budget_mb, **params):
    return tlp.TlpBudget(base.BudgetParams(**params)).limits(vms, budget_mb)


def test_a_vm_that_saw_swap_ins_grows_by_p_percent_of_the_budget():
    budgets = tlp_limits([
        # 200 + 2 % of 1000 = 220.
        Vm('a', cap_mb=500, used_mb=100, swap_ins=5, limit_mb=200),
        # No swap-ins; slack 120 - 100 = 20 is not above 0.25 x 120 = 30:
        # unchanged.
        Vm('b', cap_mb=500, used_mb=100, limit_mb=120),
    ], 1000)
    assert budgets == base.Budgets(limits={'a': 220, 'b': 120}, excess_mb=0)


def test_a_vm_with_slack_shrinks_by_p_percent_of_its_own_limit():
    budgets = tlp_limits([
        # Slack 400 - 100 = 300 above 0.25 x 400 = 100: 400 - 2 % of 400
        # = 392.
        Vm('a', cap_mb=500, used_mb=100, limit_mb=400),
        # Slack 100, exactly 0.25 x 400: not above, unchanged.
        Vm('b', cap_mb=500, used_mb=300, limit_mb=400),
    ], 1000)
    assert budgets.limits == {'a': 392, 'b': 400}


def test_a_vm_with_swap_ins_grows_however_much_slack_it_has():
    # Slack 300 of 400, but it swapped in: 400 + 20 = 420.
    assert tlp_limits([Vm('a', cap_mb=500, used_mb=100, swap_ins=1,
                          limit_mb=400)], 1000).limits == {'a': 420}


def test_a_short_vm_grows_as_if_it_saw_swap_ins():
    # A VM new to the policy starts at its use, 0; short: 0 + 20 = 20.
    assert tlp_limits([Vm('a', cap_mb=500, short=True)],
                      1000).limits == {'a': 20}


def test_a_new_vm_starts_at_its_use():
    # 64 held, slack 0: stays 64; nothing held and nothing asked: 0.
    assert tlp_limits([Vm('a', cap_mb=500, used_mb=64), Vm('b', cap_mb=500)],
                      1000).limits == {'a': 64, 'b': 0}


def test_the_cap_bounds_the_growth():
    # 490 + 20 = 510, above the cap of 500.
    assert tlp_limits([Vm('a', cap_mb=500, swap_ins=3, limit_mb=490)],
                      1000).limits == {'a': 500}


def test_a_shrinking_limit_stops_at_what_the_vm_uses():
    # Threshold 0: slack 1 is above 0; 101 - 2.02 = 98.98, below the use
    # of 100: 100.
    assert tlp_limits([Vm('a', cap_mb=500, used_mb=100, limit_mb=101)], 1000,
                      tlp_slack_threshold=0.0).limits == {'a': 100}


def test_use_above_the_cap_wins_over_the_cap():
    # The cap was lowered below what the VM holds: the limit is its use.
    assert tlp_limits([Vm('a', cap_mb=500, used_mb=600, swap_ins=1,
                          limit_mb=600)], 10000).limits == {'a': 600}


def test_limits_over_the_budget_are_scaled_to_it_and_the_excess_given():
    budgets = tlp_limits([
        Vm('a', cap_mb=2000, swap_ins=1, limit_mb=980),   # 980 + 20 = 1000
        Vm('b', cap_mb=2000, swap_ins=1, limit_mb=580),   # 580 + 20 = 600
        Vm('c', cap_mb=2000, swap_ins=1, limit_mb=380),   # 380 + 20 = 400
    ], 1000)
    # Sum 2000 over a budget of 1000: excess 1000, every limit x 1/2.
    assert budgets == base.Budgets(limits={'a': 500, 'b': 300, 'c': 200},
                                   excess_mb=1000)


def test_scaling_keeps_a_vm_at_its_use_and_shares_the_rest():
    budgets = tlp_limits([
        Vm('a', cap_mb=2000, swap_ins=1, limit_mb=980),   # 1000
        Vm('b', cap_mb=2000, swap_ins=1, limit_mb=580),   # 600
        Vm('c', cap_mb=2000, used_mb=300, swap_ins=1,
           limit_mb=380),                                 # 400
    ], 1000)
    # Sum 2000, excess 1000. Halved, c would get 200, below the 300 it
    # holds: c keeps 300, and a and b share the 700 left in proportion to
    # 1000 : 600: a 1000 x 700 / 1600 = 437.5 -> 437, b 600 x 700 / 1600 =
    # 262.5 -> 262.
    assert budgets == base.Budgets(limits={'a': 437, 'b': 262, 'c': 300},
                                   excess_mb=1000)


def test_uses_above_the_budget_leave_every_vm_at_its_use():
    budgets = tlp_limits([
        Vm('a', cap_mb=1000, used_mb=300, swap_ins=1,
           limit_mb=300),                                 # 300 + 10 = 310
        Vm('b', cap_mb=1000, used_mb=400, limit_mb=400),  # no slack: 400
    ], 500)
    # Sum 710 over 500: excess 210. The VMs hold 700 already: nothing is
    # taken back, each limit is its use.
    assert budgets == base.Budgets(limits={'a': 300, 'b': 400},
                                   excess_mb=210)


def test_periods_in_a_row_feed_the_limits_back():
    def period(limit, swap_ins):
        vm = Vm('a', cap_mb=300, used_mb=100, swap_ins=swap_ins,
                limit_mb=limit)
        return tlp_limits([vm], 1000, tlp_step_percent=10.0).limits['a']

    # P = 10 %: +100 with swap-ins; with slack above a quarter, -10 %.
    limit = period(None, 1)     # 100 + 100 = 200
    assert limit == 200
    limit = period(limit, 2)    # 200 + 100 = 300, the cap
    assert limit == 300
    limit = period(limit, 0)    # slack 200 > 75: 300 - 30 = 270
    assert limit == 270
    limit = period(limit, 0)    # slack 170 > 67.5: 270 - 27 = 243
    assert limit == 243


def test_the_policy_keeps_nothing_between_calls():
    policy = tlp.TlpBudget()
    vms = [Vm('a', cap_mb=500, used_mb=100, swap_ins=1, limit_mb=200)]
    assert policy.limits(vms, 1000) == policy.limits(vms, 1000)
    assert vms[0].limit_mb == 200


def test_each_vm_once_and_no_negative_budget():
    policy = tlp.TlpBudget()
    with pytest.raises(ValueError):
        policy.limits([Vm('a', cap_mb=1), Vm('a', cap_mb=2)], 10)
    with pytest.raises(ValueError):
        policy.limits([Vm('a', cap_mb=1)], -1)
