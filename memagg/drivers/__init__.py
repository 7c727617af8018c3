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

"""memagg's plug-in families, a package each behind one interface (its
base module), loaded by stevedore from the entry-point namespace the
option that selects them names. May import conf and common, the C
extension (memagg._native) and another family's interface (the reclaim
mechanisms page out the hypervisor drivers' VMs), nothing above.
"""
