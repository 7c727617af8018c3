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

"""fixed: every VM may hold its cap, [reservoir] max_remote_ratio of its
booked memory, whatever the others do (memagg's behaviour before the
remote budget policies)."""
from memagg.drivers.remote_budget import base


class FixedBudget(base.RemoteBudget):
    """Each VM's limit is its cap; the node's budget is not looked at. A VM
    asks for its whole cap the first time it runs short, and not again
    while it holds a grant (a grant the donors could fill only in part is
    not topped up)."""

    name = 'fixed'

    def _limits(self, vms, budget_mb):
        return base.Budgets(limits={vm.uuid: vm.cap_mb for vm in vms})
