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

"""The tiers of this host's remote memory (ALGORITHMS.md §8): each slab of
a VM's grant is on a donor (L1) or in the local copy only (L2).

Every [reservoir] tier_interval seconds the [reservoir] tier_policy
plug-in plans which slabs move, from each slab's heat (the swap-ins it
served since the last plan, counted from the swap events drained from
memagg-swapd every period: :meth:`Tiers.feed`), where each slab is
(EXPORT_DESCRIBE; a stale slab, whose local copy missed writes, stays
where it is) and each VM's QoS weight. The host's L1 capacity is
[reservoir] tier_l1_capacity_mb, or what its VMs' remote limits allow
when that is less (or 0), in slabs; no VM's share is more than its own
limit. The moves go to
memagg-scheduler, one cast per grant (SchedulerAPI.move_slabs), which
demotes and promotes them (memagg.scheduler.tier_moves); the next plan
sees where they are then.
"""
import dataclasses
import time

from oslo_log import log as logging

from memagg.common import exceptions
from memagg.compute import remote_grants
from memagg.compute import swapd
from memagg.drivers.tiers import base as tiers_base

LOG = logging.getLogger(__name__)


class SlabHeat:
    """Swap-ins per slab of each grant since the last plan, and the order
    in which slabs last served one (kept across plans: it breaks ties)."""

    def __init__(self):
        self._counts = {}       # (grant uuid, index) -> swap-ins
        self._last = {}         # (grant uuid, index) -> sequence number
        self._seq = 0

    def feed(self, grant_uuid, slab_mb, events):
        """Count the swap-ins among ``events`` ((kind, page) of
        memagg-swapd's GHOST, 4 KiB pages) of a grant of ``slab_mb``
        slabs."""
        pages_per_slab = slab_mb * remote_grants.MIB // 4096
        for kind, page in events:
            if kind != swapd.SWAP_IN or pages_per_slab <= 0:
                continue
            key = (grant_uuid, page // pages_per_slab)
            self._counts[key] = self._counts.get(key, 0) + 1
            self._seq += 1
            self._last[key] = self._seq

    def slab(self, grant_uuid, index, number, pinned=False):
        """Slab ``index`` of the grant, as policy Slab ``number``."""
        key = (grant_uuid, index)
        return tiers_base.Slab(index=number, heat=self._counts.get(key, 0),
                               last_seen=float(self._last.get(key, 0)),
                               pinned=pinned)

    def restart(self, grant_uuids):
        """A new interval: counts start again; what is kept of the grants
        not in ``grant_uuids`` is dropped."""
        self._counts = {}
        self._last = {k: v for k, v in self._last.items()
                      if k[0] in grant_uuids}


class Tiers:
    """Plans this host's moves between the tiers (see the module).

    ``client`` is the SwapdClient, ``scheduler_api`` memagg-scheduler's
    RPC client, ``weight_of(uuid)`` a VM's QoS weight as a positive
    number. The [reservoir] tier_policy plug-in is loaded here: a bad name
    or parameter raises InvalidParameter naming the option, at start.
    """

    def __init__(self, conf, host, client, scheduler_api, weight_of,
                 clock=time.monotonic):
        self.host = host
        self.client = client
        self.scheduler_api = scheduler_api
        self.weight_of = weight_of
        self.policy = tiers_base.load(conf)
        self.interval = conf.reservoir.tier_interval
        self.slab_mb = conf.reservoir.slab_size_mb
        self.l1_capacity_mb = conf.reservoir.tier_l1_capacity_mb
        self.heat = SlabHeat()
        # Each VM's L1 allocation (MiB, by uuid) of the last plan, for the
        # report: memagg-scheduler reclaims from the VMs most over theirs.
        self.shares_mb = {}
        self._clock = clock
        self._next = clock() + self.interval

    def feed(self, grant, events):
        """Swap events drained from ``grant``'s export (remote_grants
        Grant) this period."""
        self.heat.feed(grant.uuid, grant.slab_size_mb, events)

    def due(self):
        return self._clock() >= self._next

    def run(self, ctxt, grants, limits_mb):
        """Plan this interval's moves of ``grants`` ({instance uuid:
        [Grant, ...]}, the running VMs' grants) within the L1 capacity of
        ``limits_mb`` (each VM's remote limit, MiB) and send them; the
        Plan, or None when memagg-swapd does not answer."""
        self._next = self._clock() + self.interval
        vms, where = [], {}
        try:
            for instance, instance_grants in sorted(grants.items()):
                vm, slabs = self._vm(instance, instance_grants)
                vms.append(vm)
                where[instance] = slabs
        except swapd.SwapdUnavailable as exc:
            LOG.warning('No tier plan this interval: memagg-swapd does not '
                        'answer (%s)', exc)
            return None
        finally:
            self.heat.restart({g.uuid for gs in grants.values() for g in gs})
        slab_mb = max(self.slab_mb, 1)
        vms = [dataclasses.replace(
            vm, limit=(limits_mb.get(vm.uuid) or 0) // slab_mb)
            for vm in vms]
        capacity = sum(vm.limit for vm in vms)
        if self.l1_capacity_mb:
            capacity = min(capacity, self.l1_capacity_mb // slab_mb)
        plan = self.policy.plan(vms, capacity)
        self.shares_mb = {uuid: int(round(share * slab_mb))
                          for uuid, share in plan.allocations.items()}
        moves = {}
        for kind, chosen in (('demote', plan.demote),
                             ('promote', plan.promote)):
            for move in chosen:
                grant_uuid, index = where[move.uuid][move.index]
                moves.setdefault(grant_uuid, {'demote': [], 'promote': []})[
                    kind].append(index)
        for grant_uuid, grant_moves in sorted(moves.items()):
            LOG.info('Grant %s: slabs %s to the local copy, %s to donors '
                     '(tier policy %s)', grant_uuid,
                     grant_moves['demote'] or 'none',
                     grant_moves['promote'] or 'none', self.policy.name)
            try:
                self.scheduler_api.move_slabs(
                    ctxt, grant_uuid, self.host, grant_moves['demote'],
                    grant_moves['promote'])
            except exceptions.ServiceUnavailable as exc:
                LOG.warning('Moves of grant %s not sent: %s', grant_uuid,
                            exc)
        return plan

    def _vm(self, instance, instance_grants):
        """The VmTiers of a VM, and {policy slab number: (grant uuid,
        index)}: its grants' slabs numbered one after the other."""
        l1, l2, slabs = [], [], {}
        for grant in sorted(instance_grants, key=lambda g: g.uuid):
            try:
                described = self.client.export_describe(grant.uuid)
            except swapd.SwapdError as exc:
                LOG.warning('Grant %s left out of the tier plan: %s',
                            grant.uuid, exc)
                continue
            count = described['size'] // max(described['slab_size'], 1)
            local = set(described.get('local_slabs', ()))
            stale = set(described.get('stale_slabs', ()))
            on_donor = {s['index'] for s in described['slabs']} - local
            for index in range(count):
                number = len(slabs)
                slabs[number] = (grant.uuid, index)
                (l1 if index in on_donor else l2).append(
                    self.heat.slab(grant.uuid, index, number,
                                   pinned=index in stale))
        return tiers_base.VmTiers(uuid=instance,
                                  weight=self.weight_of(instance),
                                  l1=tuple(l1), l2=tuple(l2)), slabs
