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

"""Stats estimator (ALGORITHMS.md §1.1): the guest's own view of its
memory in use, from libvirt's balloon statistics.

used = available - usable (available - unused when the guest gives no
usable). Cheap, needs the balloon driver, blind to which pages are hot.
"""
from memagg.drivers.wss import base


def used_mb(stats):
    """Memory in use inside the guest in MiB from memoryStats (KiB), or
    None when the statistics lack what the formula needs."""
    if not stats:
        return None
    available = stats.get('available')
    free = stats.get('usable')
    if free is None:
        free = stats.get('unused')
    if available is None or free is None:
        return None
    return max(0, available - free) // 1024


class StatsEstimator(base.WssEstimator):
    """WSS = the guest's used memory; shortage from swap-in/fault rates."""

    name = 'stats'

    def estimate(self, obs):
        return base.Estimate(wss_mb=used_mb(obs.stats), source='stats',
                             shortage=base.shortage_signal(obs, self.params))
