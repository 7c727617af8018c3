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

"""Swap-ghost estimator (ALGORITHMS.md §1.3): WSS = m_cur + m_ghost.

Valid only in a period with swap-ins (the VM is short of memory); the
Observation carries the period's GhostPeriod from the VM's GhostTracker.
"""
from memagg.drivers.wss import base
from memagg.drivers.wss import ghost as ghost_mod


def ghost_wss_mb(obs):
    """m_cur + m_ghost in MiB (a float), or None without swap-ins."""
    ghost = obs.ghost
    if ghost is None or not ghost.swap_ins or ghost.ghost_mb is None:
        return None
    return obs.m_cur_mb + ghost.ghost_mb


class SwapGhostEstimator(base.WssEstimator):
    """Sees only shortage (S_less): how much more memory would have
    avoided the period's swap-ins."""

    name = 'swap_ghost'

    def estimate(self, obs):
        wss = ghost_wss_mb(obs)
        shortage = bool(obs.ghost is not None and obs.ghost.swap_ins)
        return base.Estimate(
            wss_mb=None if wss is None else base.to_mb(wss),
            source='ghost',
            shortage=shortage or base.shortage_signal(obs, self.params))


def new_tracker(params):
    """A GhostTracker with the histogram [wss] ``params`` give."""
    return ghost_mod.GhostTracker(bucket_mb=params.ghost_bucket_mb,
                                  buckets=params.ghost_buckets,
                                  percentile=params.ghost_percentile)
