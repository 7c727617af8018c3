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

"""Badis (ALGORITHMS.md §1.4), the default estimator: the sampler and the
swap-ghost estimator combined per VM by a state machine.

- V: sampler only; WSS = (f / n) * m_cur + corr.
- VG: sampler and ghost; with swap-ins this period WSS = the ghost's
  estimate, otherwise the sampler's.
- G: ghost only (the sampler is off); without swap-ins the VM holds.

V -> VG when the sampler reaches badis_close_ratio of m_cur, or, for a VM
without a remote-swap disk, when the stats show a shortage; VG -> V when it
falls back below with no swap-ins; VG -> G after badis_switch_periods
periods in a row with swap-ins; G -> V after as many without.

corr, the pinned-page correction: swapping in VG means the true WSS is at
least m_cur while the sampler reads f/n < 1; the pages it calls cold are
pinned. corr = m_cur * (1 - f / n), refreshed whenever VG sees swapping and
never below min_margin_mb, so a VM is never shrunk to the raw sampler value.

"Swap-ins" are the ghost's when the VM has a remote-swap disk; otherwise
the balloon statistics' swap-in / major-fault rates stand in, and a VM
short of memory grows by grow_step_mb a period.

Without a sampler window the guest's used memory (balloon statistics)
stands in, except for a single window lost between two (see _sample).
"""
from memagg.drivers.wss import base
from memagg.drivers.wss import sampler as sampler_mod
from memagg.drivers.wss import stats as stats_mod
from memagg.drivers.wss import swap_ghost

V = 'V'
VG = 'VG'
G = 'G'


class BadisEstimator(base.WssEstimator):
    """One VM's Badis state machine."""

    name = 'badis'

    def __init__(self, params=None):
        super().__init__(params)
        self.state = V
        self.corr_mb = float(self.params.min_margin_mb)
        self._swap_periods = 0
        self._quiet_periods = 0
        # The last window's (f / n) * m_cur, kept for one lost window.
        self._last_sample = None

    @property
    def needs_sampler(self):
        """The sampler is off in G."""
        return self.state != G

    def _enter(self, state):
        self.state = state
        self._swap_periods = 0
        self._quiet_periods = 0

    def _swapping(self, obs):
        ghost = obs.ghost
        if obs.has_remote_swap and ghost is not None:
            return bool(ghost.swap_ins or ghost.unmatched_swap_ins)
        return base.shortage_signal(obs, self.params)

    def _sample(self, obs):
        """The sampler's (f / n) * m_cur; when this period's window is lost
        right after one that was not, that one's ('held'); else the
        guest's used memory."""
        sample = sampler_mod.sampler_mb(obs)
        held, self._last_sample = self._last_sample, sample
        if sample is not None:
            return sample, 'sampler'
        # V and VG are the sampler's states (§1.4). The stats' used memory
        # counts page cache (§1.1): for a guest sampled a period ago it is
        # no WSS, and one such value raises WSS^maxavg at once and for the
        # whole slice (§1.5). The last window, a period old, is the best
        # measurement there is; a second lost window in a row means no
        # sampler, and the stats stand in as for a VM without one.
        if held is not None:
            return held, 'held'
        used = stats_mod.used_mb(obs.stats)
        if used is not None:
            return float(used), 'stats'
        return None, 'sampler'

    def _grow(self, obs):
        ghost = swap_ghost.ghost_wss_mb(obs)
        if ghost is not None:
            return ghost, 'ghost'
        return obs.m_cur_mb + self.params.grow_step_mb, 'grow'

    def estimate(self, obs):
        params = self.params
        swapping = self._swapping(obs)
        shortage = swapping or base.shortage_signal(obs, params)
        wss, source = None, 'sampler'
        if self.state == G:
            # The sampler is off: nothing of its to hold once back in V.
            self._last_sample = None
            if swapping:
                self._quiet_periods = 0
                wss, source = self._grow(obs)
            else:
                self._quiet_periods += 1
                wss, source = obs.m_cur_mb, 'hold'
                # Back to V from the next period, when the sampler runs.
                if self._quiet_periods >= params.badis_switch_periods:
                    self._enter(V)
            return self._result(wss, source, shortage)

        sample, sample_source = self._sample(obs)
        close = (sample is not None
                 and sample >= params.badis_close_ratio * obs.m_cur_mb)
        # Without a remote-swap disk the stats' shortage signal stands in
        # for the ghost and the VM grows (§1.4), however far below m_cur the
        # sampler reads: a thrashing guest gets through little of its hot
        # set per period, so the ratio alone would keep it squeezed in V.
        if self.state == V and (close or (swapping
                                          and not obs.has_remote_swap)):
            self._enter(VG)
        if self.state == VG:
            if swapping:
                self._swap_periods += 1
                if sample is not None:
                    self.corr_mb = max(float(params.min_margin_mb),
                                       obs.m_cur_mb - sample)
                wss, source = self._grow(obs)
                if self._swap_periods >= params.badis_switch_periods:
                    self._enter(G)
                return self._result(wss, source, shortage)
            self._swap_periods = 0
            if close:
                return self._result(sample, sample_source, shortage)
            self._enter(V)
        if sample is not None:
            wss, source = sample + self.corr_mb, sample_source
        return self._result(wss, source, shortage)

    def _result(self, wss, source, shortage):
        return base.Estimate(
            wss_mb=None if wss is None else base.to_mb(wss), source=source,
            shortage=shortage, state=self.state)
