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

"""tlp (ALGORITHMS.md §4): per-VM remote limits by additive increase and
multiplicative decrease over the node's remote budget B.

Each period, with P = [reservoir] tlp_step_percent and the slack threshold
s = [reservoir] tlp_slack_threshold, a VM's limit L (its use, for a VM new
to the policy):

1. grows by P % of B when the VM saw swap-ins this period, or is short of
   memory its node cannot give it (a VM without remote memory has no
   swap-ins of its own to show: this is how it gets its first);
2. otherwise shrinks by P % of L when its slack, L less its use, is above
   s × L;
3. is kept within [its use, its cap]: never above [reservoir]
   max_remote_ratio of its booked memory, and never below what it holds
   (when its use is above its cap, the use wins: nothing it holds is taken
   back by a limit);
4. when the limits add up to more than B, the excess is reported (what the
   node asks of memagg-scheduler) and every limit is scaled by B / ΣL.
   Scaling never takes a VM below its use either: such a VM keeps its use,
   and the budget left after those is shared among the others in
   proportion to their limits, so the limits add up to B again. When the
   VMs' uses alone exceed B, every limit is its VM's use.

Limits are whole MiB, rounded down.
"""
from memagg.drivers.remote_budget import base


def scaled(vms, wanted, budget_mb):
    """``wanted`` ({uuid: MiB}) scaled to add up to at most ``budget_mb``,
    no VM of ``vms`` below its use (see the module's docstring)."""
    used = {vm.uuid: vm.used_mb for vm in vms}
    at_use = set()
    while True:
        free = [uuid for uuid in wanted if uuid not in at_use]
        room = budget_mb - sum(used[uuid] for uuid in at_use)
        total = sum(wanted[uuid] for uuid in free)
        # Integer arithmetic: wanted × room / total, exact before rounding.
        below = [uuid for uuid in free
                 if wanted[uuid] * room < used[uuid] * total]
        if not below:
            # total is 0 only when the VMs left want, so use, nothing.
            return {uuid: used[uuid] if uuid in at_use or total == 0
                    else wanted[uuid] * room // total for uuid in wanted}
        at_use.update(below)


class TlpBudget(base.RemoteBudget):
    """AIMD sharing of the node's remote budget (see the module's
    docstring). A VM holding remote memory asks for more whenever its
    limit grows beyond what it holds."""

    name = 'tlp'
    tops_up = True
    remembers = True

    def _limits(self, vms, budget_mb):
        step = self.params.tlp_step_percent / 100.0
        threshold = self.params.tlp_slack_threshold
        wanted = {}
        for vm in vms:
            limit = vm.used_mb if vm.limit_mb is None else vm.limit_mb
            if vm.swap_ins > 0 or vm.short:
                limit += step * budget_mb
            elif limit - vm.used_mb > threshold * limit:
                limit -= step * limit
            wanted[vm.uuid] = max(vm.used_mb, min(vm.cap_mb, int(limit)))
        total = sum(wanted.values())
        if total <= budget_mb:
            return base.Budgets(limits=wanted)
        return base.Budgets(limits=scaled(vms, wanted, budget_mb),
                            excess_mb=total - budget_mb)
