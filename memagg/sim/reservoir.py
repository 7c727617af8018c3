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

"""memagg-sim's model of the global memory reservoir (ALGORITHMS.md §4): a
host whose VMs' working sets exceed its memory borrows other hosts' idle
memory as remote swap, VM by VM, within each VM's cap.

Every step, once migrations landed and VMs arrived and left, before
overload is counted (memagg.sim.engine):

1. The grants of VMs that left are released, and the slabs a VM's own host
   lends it (it migrated onto its donor) are given back: no host lends to
   itself. A grant follows its VM when it migrates, as a metadata-only
   migration moves it (ALGORITHMS.md §5).
2. Each host's lendable memory: its memory less its VMs' working sets,
   less the working sets of the VMs migrating to it (destination capacity
   is reserved for migrations in flight), less [reservoir]
   donor_reserve_mb; nothing while the host is off or short of memory
   itself (local needs first). A donor lending more than that reclaims
   the difference, in whole slabs, from the VMs most over their L1
   share (their limit) first, a slab at a time, of one VM its newest
   grants first.
3. A host whose VMs' working sets W exceed its memory M is short by
   W - M, and each of its VMs by its share, w / W of it (the local policy
   squeezes its VMs alike). Each VM's remote limit comes from the
   [reservoir] remote_budget plug-in memagg-compute runs (its cap being
   [reservoir] max_remote_ratio of its booked memory, the host's budget
   remote_budget.base.remote_budget_mb), a step being one period: a VM
   that saw swap-ins is one that ran partly remote the step before. A VM
   short of more than it holds asks memagg-scheduler for its limit less
   what it holds, when it holds no grant or the plug-in tops up (fixed: its
   whole cap, once; tlp: each time its limit grows). As memagg-scheduler
   does, the request is made whole slabs, cut to what the cap leaves, and
   spread over the donors by the [reservoir] donor_selection plug-in; a
   request the donors cannot fill is met in part.
4. A VM runs remote the smaller of its share and what it holds; what its
   grants do not cover is memory overload, so a host is in memory
   overload only when its VMs' working sets exceed its memory and the
   remote memory they hold.
5. Remote memory is not free: a VM that runs a share f of its working set
   remote uses ``penalty`` x f more cores than the trace says (page faults
   served over the network cost CPU time), counted in its host's cpu.

With two tiers (``l2_penalty`` set: memagg-sim --l2-penalty; ALGORITHMS.md
§8) a VM's remote memory is on donors (L1) or in its host's local copy
(L2, flash): the slabs a donor reclaims stay the VM's in L2 instead of
going away, and what a request's donors cannot lend is granted in L2
(within the VM's cap; the local copy always has room). Each step, before
step 3, a VM that ran partly remote the step before promotes its L2 back
to donors with room, at most [reservoir] tier_batch_slabs slabs. A VM
runs remote first from L1, then from L2; the L2 share costs
``l2_penalty`` x f more cores.

The plug-ins run only on the hosts short of memory or with a VM that ran
partly remote the step before and, for a plug-in whose limits depend on
the period before (tlp), on the hosts whose VMs' limits still move: a
step where no host is short and no limit moves costs a few array
operations.
"""
import collections
import dataclasses
import heapq
import math
import random

import numpy as np

from memagg.drivers.remote_budget import base as budget_base

#: Below this (MiB) a host's working sets count as covered: the shares of
#: a host's shortage are floats whose sum may miss it by a rounding error.
EPSILON_MB = 1e-6


@dataclasses.dataclass(frozen=True)
class Settings:
    """The [reservoir] options the model reads, and ``penalty``: the extra
    cores a VM uses per share of its working set that is remote
    (memagg-sim --remote-penalty); ``seed`` seeds the donor selection's
    draws, so that a run is repeatable; ``l2_penalty`` the same cost for
    the share in the local copy's tier (None: one tier, donors only)."""

    max_remote_ratio: float
    donor_reserve_mb: int
    slab_size_mb: int
    penalty: float = 0.1
    seed: int = 0
    l2_penalty: float | None = None
    tier_batch_slabs: int = 8


@dataclasses.dataclass
class Stats:
    """What remote memory did over a run. Per step (arrays of the trace's
    length): remote memory in use (MiB of working sets running remote),
    remote memory granted (MiB the grants hold), VMs running partly remote,
    hosts with such a VM, VMs running. Totals: grants made and ended
    (released when their VM left, or reclaimed to the last slab), MiB
    granted, released and reclaimed, requests no donor could meet at all,
    and the extra core-seconds of the penalty. With two tiers: MiB in L2
    per step, and MiB demoted (reclaimed into L2), promoted back to donors
    and granted in L2 at once."""

    in_use_mb: np.ndarray
    granted_mb: np.ndarray
    remote_vms: np.ndarray
    remote_hosts: np.ndarray
    running_vms: np.ndarray
    grants_made: int = 0
    grants_ended: int = 0
    made_mb: int = 0
    released_mb: int = 0
    reclaimed_mb: int = 0
    refused: int = 0
    penalty_core_s: float = 0.0
    l2_mb: np.ndarray | None = None
    demoted_mb: int = 0
    promoted_mb: int = 0
    l2_granted_mb: int = 0


class _Grant:
    """One grant: its VM and the slabs each donor (host index) lends it."""

    __slots__ = ('vm', 'slabs')

    def __init__(self, vm, slabs):
        self.vm = vm
        self.slabs = slabs


class Model:
    """The reservoir over one trace's hosts and VMs.

    ``budget``: the remote_budget plug-in; ``selection``: the donor
    selection plug-in (memagg.drivers.reservoir). ``step`` is called once
    per step, in order.
    """

    def __init__(self, settings, budget, selection, trace, hosts):
        self.settings = settings
        self.budget = budget
        self.selection = selection
        self.trace = trace
        self.memory = hosts.memory_mb.astype(float)
        self.cap = np.floor(settings.max_remote_ratio
                            * trace.booked_mb).astype(int)
        self.held = np.zeros(trace.vms, dtype=int)
        self.l2 = np.zeros(trace.vms, dtype=int)   # MiB in the local tier
        self.tiers = settings.l2_penalty is not None
        self.lent = np.zeros(len(hosts), dtype=int)
        self.grants = {}                        # VM -> [_Grant]
        self.by_donor = collections.defaultdict(list)
        self.limits = {}                        # VM -> limit, when not its use
        self.moving = set()                     # VMs whose limit may move
        self.remote = {}                        # VM -> MiB remote last step
        self.rng = random.Random(settings.seed)
        steps = trace.steps
        self.stats = Stats(
            in_use_mb=np.zeros(steps), granted_mb=np.zeros(steps, dtype=int),
            remote_vms=np.zeros(steps, dtype=int),
            remote_hosts=np.zeros(steps, dtype=int),
            running_vms=np.zeros(steps, dtype=int),
            l2_mb=np.zeros(steps, dtype=int) if self.tiers else None)

    # -- grants -----------------------------------------------------------

    def _end(self, grant):
        self.grants[grant.vm].remove(grant)
        if not self.grants[grant.vm]:
            del self.grants[grant.vm]
        self.stats.grants_ended += 1

    def _give_back(self, grant, donor, slabs):
        """``slabs`` of ``grant``'s on ``donor`` go back to it; MiB."""
        mb = slabs * self.settings.slab_size_mb
        grant.slabs[donor] -= slabs
        if not grant.slabs[donor]:
            del grant.slabs[donor]
            self.by_donor[donor].remove(grant)
        self.lent[donor] -= mb
        self.held[grant.vm] -= mb
        if grant.vm in self.limits:
            self.moving.add(grant.vm)
        if not grant.slabs:
            self._end(grant)
        return mb

    def _release(self, host_of):
        """Step 1: grants of VMs gone, slabs lent by a VM's own host."""
        gone = np.flatnonzero((self.l2 > 0) & (host_of < 0))
        self.stats.released_mb += int(self.l2[gone].sum())
        self.l2[gone] = 0
        for vm in list(self.grants):
            host = host_of[vm]
            for grant in list(self.grants[vm]):
                for donor in list(grant.slabs):
                    if host < 0:
                        self.stats.released_mb += self._give_back(
                            grant, donor, grant.slabs[donor])
                    elif donor == host:
                        self.stats.reclaimed_mb += self._give_back(
                            grant, donor, grant.slabs[donor])

    def _reclaim(self, lendable):
        """Step 2: each donor lending more than ``lendable`` takes the
        excess back, in whole slabs, from the VMs most over their L1
        share first (what they hold on donors less their limit, the share
        of memagg-compute's tier policy without a host bound), a slab at a
        time; of one VM's, its newest grants first (as
        memagg.db.grants.slabs_take_for_reclaim)."""
        slab = self.settings.slab_size_mb
        for donor in np.flatnonzero(self.lent > lendable).tolist():
            wanted = math.ceil((self.lent[donor] - lendable[donor]) / slab)
            newest = {}                 # VM -> its grants here, oldest first
            for order, grant in enumerate(self.by_donor[donor]):
                newest.setdefault(grant.vm, []).append((order, grant))
            heap = [(-self._excess(vm), -grants[-1][0], vm)
                    for vm, grants in newest.items()]
            heapq.heapify(heap)
            while wanted > 0 and heap:
                _, _, vm = heapq.heappop(heap)
                grants = newest[vm]
                grant = grants[-1][1]
                mb = self._give_back(grant, donor, 1)
                wanted -= 1
                if donor not in grant.slabs:
                    grants.pop()
                if grants:
                    heapq.heappush(heap, (-self._excess(vm),
                                          -grants[-1][0], vm))
                self.stats.reclaimed_mb += mb
                if self.tiers:
                    # Demoted: the VM keeps it, in its local copy.
                    self.l2[vm] += mb
                    self.stats.demoted_mb += mb

    def _excess(self, vm):
        """MiB ``vm`` holds on donors beyond its limit (its L1 share)."""
        return int(self.held[vm]) - self.limits.get(vm, int(self.held[vm]))

    def _grant(self, vm, host, size_mb, room):
        """memagg-scheduler's answer to ``vm`` on ``host`` asking
        ``size_mb``: whole slabs, within what its cap leaves, over the
        donors of ``room`` (host -> MiB it may still lend), which it
        updates."""
        slab = self.settings.slab_size_mb
        count = min(math.ceil(size_mb / slab),
                    max(0, self.cap[vm] - self.held[vm] - self.l2[vm])
                    // slab)
        if count < 1:
            return
        picked = self.selection.select(count, slab, list(room.items()),
                                       host, self.rng)
        if self.tiers:
            # What no donor lends is granted in the local copy's tier.
            unmet = (count - sum(n for _, n in picked)) * slab
            self.l2[vm] += unmet
            self.stats.l2_granted_mb += unmet
        if not picked:
            if not self.tiers:
                self.stats.refused += 1
            return
        self._lend(vm, picked, room)
        self.stats.grants_made += 1

    def _lend(self, vm, picked, room):
        """A grant to ``vm`` of ``picked`` ([(donor, slabs)]), taken from
        ``room``."""
        slab = self.settings.slab_size_mb
        grant = _Grant(vm, dict(picked))
        self.grants.setdefault(vm, []).append(grant)
        for donor, slabs in picked:
            self.by_donor[donor].append(grant)
            mb = slabs * slab
            self.lent[donor] += mb
            self.held[vm] += mb
            self.stats.made_mb += mb
            room[donor] -= mb
            if room[donor] < slab:
                del room[donor]

    def _promote(self, host_of, lendable):
        """Before step 3, two tiers: the VMs that ran partly remote the
        step before move their L2 back to donors with room, at most
        tier_batch_slabs slabs each."""
        slab = self.settings.slab_size_mb
        room = None
        for vm in [vm for vm in self.remote if self.l2[vm] > 0
                   and host_of[vm] >= 0]:
            if room is None:
                room = self._room(lendable)
            count = min(int(self.l2[vm]) // slab,
                        self.settings.tier_batch_slabs)
            picked = self.selection.select(count, slab, list(room.items()),
                                           int(host_of[vm]), self.rng)
            if not picked:
                continue
            self._lend(vm, picked, room)
            mb = sum(n for _, n in picked) * slab
            self.l2[vm] -= mb
            self.stats.promoted_mb += mb

    # -- a step -----------------------------------------------------------

    def step(self, t, host_of, active, wss, reserved, cpu):
        """Step ``t``: ``host_of`` each VM's host index (-1: not running),
        ``active`` the hosts on, and per host ``wss`` its VMs' working sets
        and ``reserved`` those of the VMs migrating to it (MiB). Returns
        per host the MiB of its VMs' working sets that neither its memory
        nor their remote memory holds, and the extra cores the penalty
        adds to ``cpu`` (per host, changed in place)."""
        stats = self.stats
        self._release(host_of)
        need = np.where(active, np.maximum(wss - self.memory, 0.0), 0.0)
        short = need > 0
        reserve = self.settings.donor_reserve_mb
        lendable = np.where(
            active & ~short,
            np.maximum(self.memory - wss - reserved - reserve, 0.0), 0.0)
        if self.lent.any():
            self._reclaim(lendable)
        if self.tiers and self.l2.any():
            self._promote(host_of, lendable)
        stats.running_vms[t] = int((host_of >= 0).sum())
        hosts = short.copy()
        for vm in [vm for vm in self.limits if host_of[vm] < 0]:
            del self.limits[vm]
            self.moving.discard(vm)
        tracked = list(self.moving)
        tracked += [vm for vm in self.remote if host_of[vm] >= 0]
        if tracked:
            hosts[host_of[tracked]] = True
        uncovered = need
        if hosts.any():
            uncovered = self._borrow(t, host_of, hosts, need, wss, lendable,
                                     cpu)
        else:
            self.remote = {}
        stats.granted_mb[t] = int(self.held.sum())
        if self.tiers:
            stats.l2_mb[t] = int(self.l2.sum())
        return uncovered

    def _borrow(self, t, host_of, hosts, need, wss, lendable, cpu):
        """Steps 3 to 5 on the VMs of ``hosts``."""
        stats = self.stats
        placed = np.flatnonzero(host_of >= 0)
        vms = placed[hosts[host_of[placed]]]
        vms = vms[np.argsort(host_of[vms], kind='stable')]
        where = host_of[vms]
        used = self.trace.wss_mb[t, vms]
        totals = wss[where]
        shares = np.divide(need[where] * used, totals,
                           out=np.zeros(len(vms)), where=totals > 0)
        room = None
        remote, slow = {}, {}
        covered = np.zeros(len(need))
        penalty = np.zeros(len(need))
        cuts = np.flatnonzero(np.diff(where)) + 1
        for group in np.split(np.arange(len(vms)), cuts):
            host = int(where[group[0]])
            members = vms[group].tolist()
            limits = self._limits(members, shares[group])
            unsettled = set()
            for vm, share in zip(members, shares[group].tolist()):
                if share > self.held[vm] + EPSILON_MB:
                    unsettled.add(vm)
                    if self.budget.tops_up or vm not in self.grants:
                        size = limits[vm] - self.held[vm]
                        if size > 0:
                            if room is None:
                                room = self._room(lendable)
                            self._grant(vm, host, size, room)
                run = min(share, float(self.held[vm]))
                local = min(share - run, float(self.l2[vm]))
                if run + local > 0:
                    remote[vm] = run
                    if local > 0:
                        slow[vm] = local
                    covered[host] += run + local
            self._remember(members, limits, unsettled | set(remote))
        if remote:
            ran = np.fromiter(remote, dtype=int, count=len(remote))
            mb = np.fromiter(remote.values(), dtype=float, count=len(remote))
            extra = (self.settings.penalty * self.trace.cpu[t, ran] * mb
                     / self.trace.wss_mb[t, ran])
            if slow:
                local = np.array([slow.get(vm, 0.0) for vm in remote])
                extra += (self.settings.l2_penalty * self.trace.cpu[t, ran]
                          * local / self.trace.wss_mb[t, ran])
            np.add.at(penalty, host_of[ran], extra)
            cpu += penalty
            stats.penalty_core_s += float(extra.sum()) * self.trace.step_s
            stats.in_use_mb[t] = float(mb.sum()) + sum(slow.values())
            stats.remote_vms[t] = len(remote)
            stats.remote_hosts[t] = int((covered > 0).sum())
        self.remote = remote
        uncovered = need - covered
        uncovered[uncovered < EPSILON_MB] = 0.0
        return uncovered

    def _limits(self, vms, shares):
        """This period's limit of each of ``vms`` (one host's) by the
        remote budget plug-in; VM -> MiB."""
        caps = {vm: int(self.cap[vm]) for vm in vms}
        held = {vm: int(self.held[vm]) for vm in vms}
        ids = self.trace.vm_ids
        budgets = self.budget.limits(
            [budget_base.VmRemote(
                uuid=ids[vm], cap_mb=caps[vm], used_mb=held[vm],
                swap_ins=int(vm in self.remote),
                short=share > held[vm] + EPSILON_MB,
                limit_mb=self.limits.get(vm))
             for vm, share in zip(vms, shares.tolist())],
            budget_base.remote_budget_mb(caps, held, True))
        return {vm: budgets.limits[ids[vm]] for vm in vms}

    def _remember(self, vms, limits, unsettled):
        """Keep the limits a remembering plug-in hands back next period;
        a limit equal to its VM's use is what the plug-in starts a new VM
        from, and is not kept.

        A VM whose limit this period left unchanged, and that was neither
        short nor partly remote (``unsettled``), is steady: until it is
        short, runs partly remote or its grants change, the plug-in gives
        it the same limit every period (a VM's limit depends on the others
        only through scaling to the host's budget, which never happens
        while the host may ask: no limit exceeds its VM's cap or use, and
        the budget is their sum). Only VMs whose limits moved keep their
        hosts in the next period's run."""
        if not self.budget.remembers:
            return
        for vm in vms:
            held = int(self.held[vm])
            if (vm not in unsettled
                    and limits[vm] == self.limits.get(vm, held)):
                self.moving.discard(vm)
            else:
                self.moving.add(vm)
            if limits[vm] != held:
                self.limits[vm] = limits[vm]
            else:
                self.limits.pop(vm, None)

    def _room(self, lendable):
        """Donor -> MiB it may still lend, for donors with a slab or
        more."""
        free = lendable - self.lent
        donors = np.flatnonzero(free >= self.settings.slab_size_mb)
        return dict(zip(donors.tolist(), free[donors].tolist()))
