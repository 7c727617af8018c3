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

"""idle_tax (ALGORITHMS.md §2.2): the idle-memory tax.

With N MiB to distribute among n VMs using A_i (mean Ā), VM i gets
Nt_i = N/n + τ (A_i − Ā): the targets sum to N; τ = 0 is an equal split,
τ = 1 leaves every VM the same free memory. Dynamic τ is the smallest that
leaves the busiest VM f free: τ_raw = (A_max + f − N/n) / (A_max − Ā),
clamped to [0, 1] (0 when every A_i is equal); it rises at once and
decays slowly: below τ_prev, τ = τ_prev − (τ_prev − τ)/γ.
"""
from memagg.drivers.local import base


class IdleTaxPolicy(base.LocalPolicy):
    """Taxes idle memory at rate τ; remembers τ between periods."""

    name = 'idle_tax'

    def __init__(self, params=None):
        super().__init__(params)
        #: The τ of the last period (None before the first).
        self.tau = None

    @property
    def label(self):
        return '%s/%s' % (self.name, self.params.tau_mode)

    def raw_targets(self, vms, host_budget_mb):
        used = {vm.uuid: vm.demand_mb for vm in vms}
        equal_share = host_budget_mb / len(vms)
        mean = sum(used.values()) / len(vms)
        if self.params.tau_mode == 'static':
            self.tau = self.params.tau
        else:
            self.tau = self._dynamic_tau(max(used.values()), mean,
                                         equal_share)
        return {uuid: equal_share + self.tau * (a - mean)
                for uuid, a in used.items()}

    def _dynamic_tau(self, a_max, mean, equal_share):
        params = self.params
        spread = a_max - mean
        if spread <= 1e-9:
            tau = 0.0
        else:
            tau = (a_max + params.tau_free_mb - equal_share) / spread
        tau = min(1.0, max(0.0, tau))
        if self.tau is not None and tau < self.tau:
            tau = self.tau - (self.tau - tau) / params.tau_decay
        return tau
