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

"""memagg-sim's model of host-side reclaim (ALGORITHMS.md §7, issue 19):
the [host_reclaim] controller memagg-compute runs (the same plug-in,
memagg.drivers.host_reclaim), driven every step by the trace.

Each running VM has a size: what it would hold in RAM without host
reclaim, its WSS max-average when it has a balloon (the balloon brings it
there) and its booked memory when it has none (nothing shrinks it). Host
reclaim holds ``reclaimed`` MiB of that size paged out; its memory in use
is size - reclaimed, which is what the engine counts on its host, as
memagg-scheduler counts a VM's memory less what host reclaim holds. At
every step, in this order:

1. Promotions: the part of the step's working set that does not fit in
   what stays resident (size - reclaimed) was paged out and is faulted
   back: reclaimed falls by it, and the promotion rate is those pages per
   minute.
2. The controller gets the VM's Signals (its WSS max-average, what it
   holds paged out, its promotion rate; no host pressure, which the
   simulator does not model; balloon_moving while a ballooned VM's
   max-average falls) and returns its limit.
3. Page-out: up to the limit, of the VM's cold memory (size - working
   set - reclaimed) only, as memagg-compute pages out only pages the
   sampler saw idle.

A VM that stops running (left, rejected) is forgotten, by the model and
by the controller.
"""
import dataclasses

import numpy as np

from memagg.drivers.host_reclaim import base as controller_base

PAGES_PER_MIB = controller_base.PAGES_PER_MIB


def balloons(vms, no_balloon):
    """Which of ``vms`` VMs have a balloon when a share ``no_balloon`` of
    them has none, spread evenly (every 1/no_balloon-th VM)."""
    index = np.arange(vms)
    without = (np.floor((index + 1) * no_balloon)
               > np.floor(index * no_balloon))
    return ~without


@dataclasses.dataclass
class Stats:
    """Per step (arrays of the trace's length): MiB host reclaim holds
    paged out of the running VMs, MiB freed (their booked memory less
    their memory in use: what balloons and host reclaim free together),
    pages promoted, and VMs whose promotion rate exceeded their SLO."""

    reclaimed_mb: np.ndarray
    freed_mb: np.ndarray
    promoted_pages: np.ndarray
    over_slo: np.ndarray


class Model:
    """Host reclaim of a trace's VMs under ``controller`` (a
    memagg.drivers.host_reclaim Controller, as controller_base.load gives
    it). ``balloon``: per VM, whether it has a balloon (default: all)."""

    def __init__(self, controller, trace, wss_maxavg, balloon=None):
        self.controller = controller
        self.trace = trace
        self.maxavg = wss_maxavg
        n = trace.vms
        self.balloon = (np.ones(n, dtype=bool) if balloon is None
                        else np.asarray(balloon, dtype=bool))
        if self.balloon.shape != (n,):
            raise ValueError('balloon: one flag per VM (%d), got %d'
                             % (n, self.balloon.size))
        self.reclaimed = np.zeros(n)
        self.promotions_per_min = np.zeros(n)
        self._known = np.zeros(n, dtype=bool)
        steps = trace.steps
        self.stats = Stats(reclaimed_mb=np.zeros(steps),
                           freed_mb=np.zeros(steps),
                           promoted_pages=np.zeros(steps),
                           over_slo=np.zeros(steps, dtype=int))
        self._per_min = 60.0 / trace.step_s

    def size_mb(self, t):
        """Each VM's memory without host reclaim at step ``t``."""
        return np.where(self.balloon, self.maxavg[t], self.trace.booked_mb)

    def in_use_mb(self, t):
        """Each VM's memory in use at step ``t``: its size less what host
        reclaim holds paged out."""
        return np.maximum(0.0, self.size_mb(t) - self.reclaimed)

    def step(self, t, running):
        """Promotions, the controller and page-out at step ``t`` for the
        VMs ``running`` (a mask)."""
        gone = self._known & ~running
        for v in np.flatnonzero(gone).tolist():
            self.controller.forget(self.trace.vm_ids[v])
        self.reclaimed[gone] = 0.0
        self.promotions_per_min[gone] = 0.0
        self._known = running.copy()

        size = self.size_mb(t)
        wss = self.trace.wss_mb[t]
        faulted = np.clip(wss - (size - self.reclaimed), 0.0, self.reclaimed)
        faulted[~running] = 0.0
        self.reclaimed -= faulted
        rate = faulted * PAGES_PER_MIB * self._per_min
        self.promotions_per_min = rate
        falling = (self.balloon & (self.maxavg[t] < self.maxavg[t - 1])
                   if t else np.zeros_like(self.balloon))

        ids, maxavg = self.trace.vm_ids, self.maxavg[t]
        over = 0
        for v in np.flatnonzero(running).tolist():
            wss_maxavg = int(round(maxavg[v]))
            signals = controller_base.Signals(
                uuid=ids[v], wss_maxavg_mb=wss_maxavg,
                swapped_mb=float(self.reclaimed[v]),
                promotions_per_min=float(rate[v]), psi_some=None,
                balloon_moving=bool(falling[v]))
            limit = self.controller.limit_mb(signals)
            slo = self.controller.slo_per_min(wss_maxavg)
            if slo is not None and rate[v] > slo:
                over += 1
            cold = max(0.0, size[v] - wss[v] - self.reclaimed[v])
            self.reclaimed[v] += min(max(0.0, limit - self.reclaimed[v]),
                                     cold)

        stats = self.stats
        stats.reclaimed_mb[t] = self.reclaimed[running].sum()
        stats.freed_mb[t] = (self.trace.booked_mb[running]
                             - self.in_use_mb(t)[running]).sum()
        stats.promoted_pages[t] = (faulted * PAGES_PER_MIB).sum()
        stats.over_slo[t] = over
