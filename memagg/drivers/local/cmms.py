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

"""cmms (ALGORITHMS.md §2.1), the default local policy.

A VM below its booked size (m_init) is a lender, above it a borrower.
1. Shrink: a VM needing less than it has gives the rest to the pool (with
   the node's free memory).
2. Guarantee: a VM needing more and below m_init gets up to
   min(need, m_init); when the pool is short, borrowers are taken back
   toward m_init first. Every VM can always get its booked size back.
3. Extra: the pool plus what borrowers hold above m_init is shared among
   the VMs still needing more, up to their need, equally or in proportion
   to their unmet need ([local_policy] share_policy).
"""
from memagg.drivers.local import base
from memagg.drivers.local import share


class CmmsPolicy(base.LocalPolicy):
    """Guaranteed share up to the booked size, extra by share_policy."""

    name = 'cmms'

    @property
    def label(self):
        return '%s/%s' % (self.name, self.params.share_policy)

    def raw_targets(self, vms, host_budget_mb):
        need = {vm.uuid: vm.demand_mb for vm in vms}
        booked = {vm.uuid: vm.m_init_mb for vm in vms}
        targets = {vm.uuid: vm.m_cur_mb for vm in vms}
        pool = max(0, host_budget_mb - sum(targets.values()))

        for uuid, target in targets.items():
            if need[uuid] < target:
                pool += target - need[uuid]
                targets[uuid] = need[uuid]

        # Borrowers go back to m_init first: the guarantee may use what
        # they held, and what it leaves is shared anew among all.
        for uuid, target in targets.items():
            if target > booked[uuid]:
                pool += target - booked[uuid]
                targets[uuid] = booked[uuid]

        guarantee = {uuid: min(need[uuid], booked[uuid]) - target
                     for uuid, target in targets.items()
                     if need[uuid] > target and target < booked[uuid]}
        for uuid, amount in share.proportional(pool, guarantee).items():
            targets[uuid] += amount
            pool -= amount

        unmet = {uuid: need[uuid] - target
                 for uuid, target in targets.items() if need[uuid] > target}
        extra = share.by_mode(self.params.share_policy, pool, unmet)
        for uuid, amount in extra.items():
            targets[uuid] += amount
        return targets
