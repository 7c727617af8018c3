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

"""The global memory reservoir (GMC) in memagg-scheduler: grants of remote
memory, lent in slabs by donor hosts (ALGORITHMS.md §4, ARCHITECTURE.md data
flow 4).

Allocation (:meth:`Reservoir.allocate`):

1. The request, in whole slabs of [reservoir] slab_size_mb, is cut to the
   VM's cap: [reservoir] max_remote_ratio of its booked memory less what
   its pending and active grants hold.
2. The slabs are reserved on donors in one transaction that locks the
   instance's and the donors' rows (memagg.db.grants.grant_reserve), so two
   allocations at once cannot lend the same memory. A donor is a host
   other than the consumer that reported within [DEFAULT]
   service_down_time; its available memory is the lendable memory it
   reported less the slabs it holds. The [reservoir] donor_selection
   plug-in splits the slabs over the donors. What the donors have no room
   for goes to the local tier with [reservoir] local_tier (L2: the
   consumer's local copy only, slabs reclaimed, until a promotion gives
   them a donor, memagg.scheduler.tier_moves); without it the grant is
   cut to what they hold. The grant is stored pending.
3. Each donor prepares its slabs (compute RPC ``prepare_slabs``, within
   [reservoir] prepare_timeout). A donor that fails, or prepares fewer
   slabs than asked (out of memory), is not asked again: the slabs it did
   not prepare go to other donors while any is left, then to the local
   tier as in step 2; what stays unprepared without it makes the grant
   partial, with the reason.
4. The consumer attaches the grant (``attach_grant``): the grant and its
   slabs on donors become active.

Whatever fails after donors prepared slabs frees them. A grant of nothing
is deleted, and RemoteMemoryUnavailable says why; a grant the consumer
could not attach is kept, failed, with the reason. A scheduler stopped in
the middle finds the grant pending at its next start and cleans it up
(:meth:`Reservoir.recover`).

Releases and reclaims, which give lent memory back, are
memagg.scheduler.grant_returns' job, moves of slabs between the tiers
memagg.scheduler.tier_moves'; what a stopped scheduler left releasing,
reclaiming or promoting is carried out at its next start.
"""
import datetime
import math
import random
import secrets
import threading
import time

from oslo_log import log as logging
from oslo_utils import timeutils
from oslo_utils import uuidutils

from memagg.common import coordination
from memagg.common import exceptions
from memagg.compute import rpcapi as compute_rpcapi
from memagg.db import grants as db_grants
from memagg.drivers.reservoir import base as selection_base
from memagg.scheduler import grant_forms
from memagg.scheduler import grant_returns
from memagg.scheduler import mode
from memagg.scheduler import rpcapi
from memagg.scheduler import tier_moves

LOG = logging.getLogger(__name__)

RemoteMemoryUnavailable = rpcapi.RemoteMemoryUnavailable


class Reservoir(grant_returns.ReturnsMixin, tier_moves.TierMovesMixin):
    """Allocates, releases and reclaims grants (the Scheduler RPC API 1.2
    calls) and moves their slabs between the tiers (1.7) with
    [reservoir]'s options.

    ``compute_api`` is the memagg-compute RPC client (made on first use by
    default); ``selection`` the donor selection plug-in (default: the one
    [reservoir] names, loaded now, so a bad option fails the service's
    start); ``rng`` the random.Random it draws with.
    """

    def __init__(self, conf, compute_api=None, selection=None, rng=None):
        self.conf = conf
        self.group = conf.reservoir
        self.selection = (selection
                          or selection_base.load_from_group(self.group))
        self._compute = compute_api
        self._compute_lock = threading.Lock()
        self.rng = rng or random.Random()
        #: Claims a grant while it is set up or recovered
        #: (memagg.common.coordination): with several workers, a grant one
        #: sets up is not taken for one a dead worker left.
        self.claim = coordination.no_claim
        #: Waits between the asks of a release or reclaim.
        self.sleep = time.sleep

    @property
    def compute(self):
        with self._compute_lock:
            if self._compute is None:
                self._compute = compute_rpcapi.ComputeAPI()
            return self._compute

    def _call(self, method, ctxt, host, *args):
        """Compute RPC ``method`` on ``host``, bounded by [reservoir]
        prepare_timeout."""
        return getattr(self.compute, method)(
            ctxt, host, *args, timeout=self.group.prepare_timeout)

    def _reported_since(self):
        return timeutils.utcnow() - datetime.timedelta(
            seconds=self.conf.service_down_time)

    def _select(self, consumer_host):
        slab_mb = self.group.slab_size_mb

        def select(count, donors):
            return self.selection.select(count, slab_mb, donors,
                                         consumer_host, self.rng)
        return select

    # -- allocate ---------------------------------------------------------

    def allocate(self, ctxt, instance_uuid, consumer_host, size_mb):
        """Grant up to ``size_mb`` MiB to ``instance_uuid`` on
        ``consumer_host``, set up before it returns; return the grant dict
        (see the RPC API). A grant of nothing is deleted and
        RemoteMemoryUnavailable says why (so it does in observe mode)."""
        self._check_manages()
        grant_uuid = uuidutils.generate_uuid()
        # Claimed before its row exists, so that no recovery takes it.
        with self.claim('grant-%s' % grant_uuid):
            grant = self.reserve(ctxt, instance_uuid, consumer_host, size_mb,
                                 grant_uuid)
            return self._set_up(ctxt, grant, keep_failed=False)

    def reserve(self, ctxt, instance_uuid, consumer_host, size_mb,
                grant_uuid=None):
        """Steps 1 and 2: store the grant pending, its slabs reserved on
        donors, and return it; RemoteMemoryUnavailable (nothing stored)
        when the cap or the donors leave not a slab. Only the database is
        asked, so the API may call it and answer at once. Refused
        (RemoteMemoryUnavailable) in observe mode."""
        self._check_manages()
        grant_forms.check_size(size_mb)
        slab_mb = self.group.slab_size_mb
        wanted = math.ceil(size_mb / slab_mb)
        select = self._select(consumer_host)

        def plan(instance, held_mb, donors, local_room_mb):
            return self._plan(instance, held_mb, donors, wanted, select,
                              local_room_mb)

        return db_grants.grant_reserve(ctxt, dict(
            uuid=grant_uuid or uuidutils.generate_uuid(),
            instance_uuid=instance_uuid, consumer_host=consumer_host,
            requested_mb=size_mb, slab_size_mb=slab_mb,
            secret=secrets.token_hex(32)), self._reported_since(), plan)

    def finish_allocation(self, ctxt, grant_uuid):
        """Steps 3 and 4 of a grant the API reserved: it ends active
        (partial with the reason), or failed with the reason, which is
        kept for its requester to read. A grant that is no longer pending,
        or that another worker claims, is left as it is."""
        with self.claim('grant-%s' % grant_uuid) as claimed:
            if not claimed:
                return
            grant = db_grants.grant_get(ctxt, grant_uuid)
            if grant.status != 'pending':
                LOG.info('Grant %s is %s: not set up again', grant_uuid,
                         grant.status)
                return
            if mode.observing(self.conf):
                # Reserved by an API that did not run in observe mode.
                self._abandon(ctxt, grant_uuid, {}, mode.refusal(
                    'grant %s is not set up' % grant_uuid), keep_failed=True)
                return
            try:
                self._set_up(ctxt, grant, keep_failed=True)
            except RemoteMemoryUnavailable:
                pass    # the grant is failed with the reason, logged

    def _check_manages(self):
        if mode.observing(self.conf):
            raise RemoteMemoryUnavailable(reason=mode.REASON)

    def _set_up(self, ctxt, grant, keep_failed):
        """Steps 3 and 4 of pending ``grant``: the grant dict once active.
        What fails frees the prepared slabs; a grant of nothing is then
        failed with the reason when ``keep_failed``, else deleted."""
        wanted = math.ceil(grant.requested_mb / grant.slab_size_mb)
        select = self._select(grant.consumer_host)
        prepared = {}
        try:
            grant = self._prepare(ctxt, grant, wanted, select, prepared,
                                  keep_failed)
        except RemoteMemoryUnavailable:
            raise
        except BaseException as exc:
            # Whatever went wrong, no prepared slab may stay behind.
            self._abandon(ctxt, grant.uuid, prepared, 'setting it up '
                          'failed: %s: %s' % (type(exc).__name__, exc),
                          keep_failed)
            raise
        return self._attach(ctxt, grant)

    def _plan(self, instance, held_mb, donors, wanted, select,
              local_room_mb=None):
        """The reservation of a grant (see memagg.db.grants.grant_reserve):
        within the VM's cap and the room of its host's local copies
        (``local_room_mb``, None: not known), on donors with room, the
        rest in the local tier."""
        slab_mb = self.group.slab_size_mb
        ratio = self.group.max_remote_ratio
        if instance.status == 'gone':
            raise RemoteMemoryUnavailable(reason=(
                'instance %s is gone from %s' % (instance.uuid,
                                                 instance.host)))
        cap_mb = int(ratio * instance.booked_mb) - held_mb
        cap_slabs = max(0, cap_mb) // slab_mb
        cap_text = (
            'instance %s may hold [reservoir] max_remote_ratio %s x its '
            'booked %d MiB = %d MiB remotely and holds %d MiB' % (
                instance.uuid, ratio, instance.booked_mb,
                int(ratio * instance.booked_mb), held_mb))
        if cap_slabs < 1:
            raise RemoteMemoryUnavailable(reason='%s: not a slab (%d MiB) '
                                          'more' % (cap_text, slab_mb))
        count = min(wanted, cap_slabs)
        reasons = []
        if count < wanted:
            reasons.append('cut to %d MiB by the cap: %s' % (
                count * slab_mb, cap_text))
        if local_room_mb is not None and local_room_mb // slab_mb < count:
            # Every page of a grant, on a donor or not, is copied there:
            # a copy that cannot grow fails the guest's writes.
            room_text = (
                '%s has room for %d MiB more of local copies (its local '
                'tier; [swapd] local_copy_reserve_mb kept free)' % (
                    instance.host, local_room_mb))
            if local_room_mb < slab_mb:
                raise RemoteMemoryUnavailable(reason='%s: not a slab (%d '
                                              'MiB) more' % (room_text,
                                                             slab_mb))
            count = local_room_mb // slab_mb
            reasons.append('cut to %d MiB: %s' % (count * slab_mb,
                                                  room_text))
        assignments = select(count, donors)
        placed = sum(n for _, n in assignments)
        if placed < count:
            short = (self._no_donor(instance.host, donors) if placed == 0
                     else 'the donors had room for %d of %d slabs (%s)' % (
                         placed, count, self._describe(donors)))
            if self.group.local_tier:
                assignments = list(assignments) + [(db_grants.LOCAL_TIER,
                                                    count - placed)]
                short += ': %d in the local tier (L2)' % (count - placed)
            elif placed == 0:
                raise RemoteMemoryUnavailable(reason=short)
            reasons.append(short)
        return assignments, '; '.join(reasons) or None

    def _describe(self, donors):
        return ', '.join('%s: %d MiB available' % d for d in donors)

    def _no_donor(self, consumer_host, donors):
        if not donors:
            return ('no compute host other than %s reported lendable memory '
                    'in the last %d s ([DEFAULT] service_down_time)' % (
                        consumer_host, self.conf.service_down_time))
        return 'no donor has room for a slab of %d MiB (%s)' % (
            self.group.slab_size_mb, self._describe(donors))

    def _prepare(self, ctxt, grant, wanted, select, prepared, keep_failed):
        """Have the donors prepare the grant's slabs, moving what a donor
        does not prepare to donors not tried yet. Fills ``prepared``
        (donor -> {index: (endpoint, remote_addr, rkey)}) as replies come;
        returns the grant with what was prepared, or raises
        RemoteMemoryUnavailable (after freeing) when nothing was."""
        notes = [grant.reason] if grant.reason else []
        tried = set()
        pending = grant_forms.by_donor(grant.slabs)
        while pending:
            unmet = []
            for host, indexes in pending.items():
                tried.add(host)
                got = self._prepare_on(ctxt, grant, host, indexes, notes)
                if got:
                    prepared.setdefault(host, {}).update(got)
                unmet += [i for i in indexes if i not in got]
            pending = {}
            if unmet:
                grant = db_grants.grant_move_slabs(
                    ctxt, grant.uuid, unmet, self._reported_since(), tried,
                    select, local_tier=self.group.local_tier)
                pending = grant_forms.by_donor(
                    s for s in grant.slabs if s.index in unmet)
                to_local = sum(1 for s in grant.slabs
                               if s.index in unmet and s.status == 'reclaimed')
                if to_local:
                    notes.append('%d slabs in the local tier (L2)' % to_local)
        local = {s.index for s in grant.slabs if s.status == 'reclaimed'}
        kept = self._keep_contiguous(ctxt, grant.uuid, prepared, local,
                                     notes)
        if not kept and not local:
            reason = '; '.join(notes) or 'no donor prepared a slab'
            self._abandon(ctxt, grant.uuid, prepared, reason, keep_failed)
            raise RemoteMemoryUnavailable(reason=reason)
        partial = len(kept) + len(local) < wanted
        return db_grants.grant_prepared(ctxt, grant.uuid, kept, partial,
                                        '; '.join(notes) or None)

    def _prepare_on(self, ctxt, grant, host, indexes, notes):
        """One donor's prepare_slabs: the slabs it prepared."""
        try:
            reply = self._call('prepare_slabs', ctxt, host, grant.uuid,
                               grant.secret, grant.slab_size_mb, indexes)
            got = grant_forms.prepared_slabs(reply, set(indexes))
        except Exception as exc:
            LOG.warning('Donor %s failed to prepare %d slabs of grant %s: '
                        '%s', host, len(indexes), grant.uuid, exc)
            notes.append('%s failed to prepare %d slabs: %s' % (
                host, len(indexes), exc))
            # It may have set slabs up before the failure (a lost reply).
            self._free(ctxt, host, grant.uuid)
            return {}
        if len(got) < len(indexes):
            LOG.warning('Donor %s prepared %d of %d slabs of grant %s',
                        host, len(got), len(indexes), grant.uuid)
            notes.append('%s prepared %d of %d slabs (out of memory)' % (
                host, len(got), len(indexes)))
        return got

    def _keep_contiguous(self, ctxt, grant_uuid, prepared, local, notes):
        """The prepared slabs of 0..k-1, slabs 0..k-1 prepared or in the
        local tier (``local``: a grant maps offsets to slabs by division,
        so it has no holes); prepared slabs past a hole are freed.
        Returns {index: (endpoint, remote_addr, rkey)}."""
        every = {i: v for slabs in prepared.values() for i, v in slabs.items()}
        count = 0
        while count in every or count in local:
            count += 1
        for host, slabs in prepared.items():
            beyond = sorted(i for i in slabs if i >= count)
            if beyond:
                notes.append('slabs %s of %s freed: slab %d could not be '
                             'set up' % (beyond, host, count))
                self._free(ctxt, host, grant_uuid, beyond)
                for index in beyond:
                    del slabs[index]
        return {i: every[i] for i in range(count) if i in every}

    def _abandon(self, ctxt, grant_uuid, prepared, reason, keep_failed):
        """Free what donors prepared; fail the grant with ``reason`` when
        ``keep_failed``, else delete it."""
        unfreed = {host for host in prepared
                   if not self._free(ctxt, host, grant_uuid)}
        LOG.warning('No remote memory granted (grant %s): %s', grant_uuid,
                    reason)
        try:
            if keep_failed:
                db_grants.grant_set_status(ctxt, grant_uuid, 'failed',
                                           'released', reason=reason,
                                           unfreed=unfreed)
            else:
                db_grants.grant_delete(ctxt, grant_uuid)
        except exceptions.NotFound:
            pass

    def _attach(self, ctxt, grant):
        """Have the consumer attach the grant; then it is active."""
        try:
            self._call('attach_grant', ctxt, grant.consumer_host,
                       grant_forms.grant_dict(grant))
        except Exception as exc:
            reason = '%s could not attach it: %s' % (grant.consumer_host,
                                                     exc)
            LOG.warning('Grant %s failed: %s', grant.uuid, reason)
            unfreed = {host for host in grant_forms.by_donor(grant.slabs)
                       if not self._free(ctxt, host, grant.uuid)}
            db_grants.grant_set_status(ctxt, grant.uuid, 'failed', 'released',
                                       reason=reason, unfreed=unfreed)
            raise RemoteMemoryUnavailable(reason=reason)
        grant = db_grants.grant_set_status(ctxt, grant.uuid, 'active',
                                           'active', expected=('pending',))
        local = sum(1 for s in grant.slabs if s.status == 'reclaimed')
        LOG.info('Grant %s: %d MiB on %s for instance %s on %s%s',
                 grant.uuid, grant.granted_mb,
                 ', '.join(['%s (%d slabs)' % (h, len(i)) for h, i in
                            grant_forms.by_donor(grant.slabs).items()] +
                           (['the local tier (%d slabs)' % local]
                            if local else [])),
                 grant.instance_uuid, grant.consumer_host,
                 ' (partial: %s)' % grant.reason if grant.partial else '')
        return grant_forms.grant_dict(grant)

    # -- recovery ---------------------------------------------------------

    def pending_grants(self, ctxt):
        """The uuids of the grants pending now: at a start, those a
        previous run left half set up."""
        return [g.uuid for g in db_grants.grants_in_status(ctxt, ('pending',))]

    def recover(self, ctxt, grant_uuids):
        """Clean up the pending grants ``grant_uuids`` a previous run or a
        dead worker left (free their slabs, mark them failed; those another
        live worker claims are left to it), carry out the releases,
        reclaims and promotions left unfinished, and free again the slabs
        whose donors did not confirm they freed them."""
        for uuid in grant_uuids:
            with self.claim('grant-%s' % uuid) as claimed:
                if claimed:
                    self._recover_grant(ctxt, uuid)
        for grant in db_grants.grants_in_status(ctxt, ('releasing',)):
            self.finish_release(ctxt, grant.uuid)
        for (uuid, host), indexes in db_grants.slabs_reclaiming(ctxt).items():
            self.finish_reclaim(ctxt, host, {uuid: indexes})
        for (uuid, host), indexes in db_grants.slabs_releasing(ctxt).items():
            if self._free(ctxt, host, uuid, indexes):
                db_grants.slabs_released(ctxt, uuid, host)
        self.recover_promotions(ctxt)

    def _recover_grant(self, ctxt, uuid):
        grant = db_grants.grant_get(ctxt, uuid)
        if grant.status != 'pending':
            return
        unfreed = {host for host in grant_forms.by_donor(grant.slabs)
                   if not self._free(ctxt, host, uuid)}
        try:
            db_grants.grant_set_status(
                ctxt, uuid, 'failed', 'released', expected=('pending',),
                unfreed=unfreed, reason=(
                    'memagg-scheduler stopped while setting it up; its '
                    'slabs were freed'))
        except exceptions.Conflict:
            return
        LOG.warning('Grant %s was left pending by a stopped worker: '
                    'failed, slabs freed', uuid)
