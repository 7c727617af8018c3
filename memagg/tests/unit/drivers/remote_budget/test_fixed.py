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

"""The fixed remote budget: the per-VM cap alone."""
from memagg.drivers.remote_budget import base
from memagg.drivers.remote_budget import fixed
from memagg.drivers.remote_budget import tlp


Vm = base.VmRemote


def test_fixed_gives_every_vm_its_cap_whatever_the_budget():
    budgets = fixed.FixedBudget().limits([
        Vm('a', cap_mb=1024, used_mb=64, swap_ins=9, limit_mb=10),
        Vm('b', cap_mb=512, short=True),
    ], 100)
    assert budgets == base.Budgets(limits={'a': 1024, 'b': 512}, excess_mb=0)
    assert not fixed.FixedBudget.tops_up and tlp.TlpBudget.tops_up
