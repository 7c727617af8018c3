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

"""A Senpai-shaped controller (Meta's TMO): each VM's reclaim limit grows
by grow_mb a period while its promotion rate stays under promotion_slo
percent of its WSS max-average per minute and the host's memory pressure
(PSI some avg10) under psi_some_max; when either is exceeded the limit is
multiplied by backoff. Held while the VM's balloon is being lowered (the
balloon goes first) and without a WSS max-average (no SLO to hold to).
The limit never runs more than grow_mb ahead of what the VM holds in swap,
so that a VM with no more cold memory does not bank a limit it would spend
at once when its hot set shrinks.
"""
import math

from memagg.drivers.host_reclaim import base


class SenpaiController(base.Controller):
    name = 'senpai'

    def __init__(self, params=None):
        super().__init__(params)
        self._limits = {}

    def over(self, signals):
        """Why the VM must back off ('promotions', 'pressure'), or None."""
        slo = self.slo_per_min(signals.wss_maxavg_mb)
        if (signals.promotions_per_min is not None and slo is not None
                and signals.promotions_per_min > slo):
            return 'promotions'
        if (signals.psi_some is not None
                and signals.psi_some > self.params.psi_some_max):
            return 'pressure'
        return None

    def limit_mb(self, signals):
        limit = self._limits.get(signals.uuid, 0)
        if self.over(signals):
            limit = math.floor(limit * self.params.backoff)
        elif (not signals.balloon_moving
              and signals.wss_maxavg_mb is not None
              and signals.promotions_per_min is not None):
            limit = min(limit + self.params.grow_mb,
                        math.ceil(signals.swapped_mb) + self.params.grow_mb)
        self._limits[signals.uuid] = limit
        return limit

    def forget(self, uuid):
        self._limits.pop(uuid, None)
