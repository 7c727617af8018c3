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

"""weighted (ALGORITHMS.md §2.3): QoS classes.

Every VM is first given what it needs (its floor and maximum apply). While
that exceeds the host budget, memory is reclaimed in steps of at most
reclaim_chunk_mb from the VM with the largest excess EX_i = U_i − PA_i over
its weighted fair share PA_i = ΣU · W_i / ΣW, where U_i is what the VM is
left with so far. A VM at its floor gives nothing more.
"""
from memagg.drivers.local import base
from memagg.drivers.local import weights as weights_mod


class WeightedPolicy(base.LocalPolicy):
    """Reclaims from the VM furthest above its weighted share first."""

    name = 'weighted'

    def weight_of(self, vm):
        """The VM's weight as a positive number."""
        return weights_mod.resolve_weight(vm.weight, self.params.weights,
                                          self.params.default_weight)

    def raw_targets(self, vms, host_budget_mb):
        ordered = sorted(vms, key=lambda vm: vm.uuid)
        weight = {vm.uuid: self.weight_of(vm) for vm in ordered}
        floor = {vm.uuid: self.floor_mb(vm) for vm in ordered}
        targets = {vm.uuid: min(vm.max_mb, max(floor[vm.uuid], vm.demand_mb))
                   for vm in ordered}
        total_weight = sum(weight.values())
        need = sum(targets.values()) - host_budget_mb
        while need > 0:
            above = [uuid for uuid in targets
                     if targets[uuid] > floor[uuid]]
            if not above:
                break
            usage = sum(targets.values())
            # max() keeps the first of equals: ties go to the lowest uuid.
            victim = max(above, key=lambda uuid: targets[uuid]
                         - usage * weight[uuid] / total_weight)
            take = min(self.params.reclaim_chunk_mb, need,
                       targets[victim] - floor[victim])
            targets[victim] -= take
            need -= take
        return targets
