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
   plug-in splits the slabs over the donors. The grant is stored pending.
3. Each donor prepares its slabs (compute RPC ``prepare_slabs``, within
   [reservoir] prepare_timeout). A donor that fails, or prepares fewer
   slabs than asked (out of memory), is not asked again: the slabs it did
   not prepare go to other donors while any is left, and what stays
   unprepared makes the grant partial, with the reason.
4. The consumer attaches the grant (``attach_grant``): the grant and its
   slabs become active.

Whatever fails after donors prepared slabs frees them. A grant of nothing
is deleted, and RemoteMemoryUnavailable says why; a grant the consumer
could not attach is kept, failed, with the reason. A scheduler stopped in
the middle finds the grant pending at its next start and cleans it up
(:meth:`Reservoir.recover`).

Release and reclaim are each begun by a compare-and-set in the DB
(:func:`begin_release`: the grant goes from active to releasing;
:func:`begin_reclaim`: each slab from active to reclaiming), so that of
concurrent requests one only carries each out and a slab is freed once.
The API begins them and answers; memagg-scheduler carries them out after
(:meth:`Reservoir.finish_release`, :meth:`Reservoir.finish_reclaim`),
asking each host up to [reservoir] operation_attempts times with growing
waits; a release a host never answers ends failed with the reason, a
reclaim its consumer never answers gives the slabs back to the grant with
the reason. What a stopped scheduler left releasing or reclaiming is
carried out at its next start.
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
from memagg.common import retry
from memagg.compute import rpcapi as compute_rpcapi
from memagg.db import grants as db_grants
from memagg.db import hosts as db_hosts
from memagg.db import migrations as db_migrations
from memagg.drivers.reservoir import base as selection_base
from memagg.scheduler import rpcapi

LOG = logging.getLogger(__name__)

RemoteMemoryUnavailable = rpcapi.RemoteMemoryUnavailable


def grant_dict(grant):
    """The grant as the RPC API returns it (with its secret)."""
    return dict(
        uuid=grant.uuid, instance_uuid=grant.instance_uuid,
        consumer_host=grant.consumer_host, requested_mb=grant.requested_mb,
        granted_mb=grant.granted_mb, partial=grant.partial,
        reason=grant.reason, status=grant.status, secret=grant.secret,
        slab_size_mb=grant.slab_size_mb,
        slabs=[dict(index=s.index, donor_host=s.donor_host,
                    endpoint=s.endpoint, remote_addr=s.remote_addr,
                    rkey=s.rkey, size_mb=s.size_mb, status=s.status)
               for s in grant.slabs])


def _check_size(size_mb):
    if isinstance(size_mb, bool) or not isinstance(size_mb, int) \
            or size_mb < 1:
        raise exceptions.InvalidParameter(
            field='size_mb', reason='got %r: give a whole number of MiB, '
                                    '1 or more' % (size_mb,))


def _by_donor(slabs):
    """``{donor: [index, ...]}`` of ``slabs`` (rows), donors in the order
    of their first slab."""
    result = {}
    for slab in slabs:
        result.setdefault(slab.donor_host, []).append(slab.index)
    return result


def _prepared_slabs(reply, indexes):
    """``{index: (endpoint, remote_addr, rkey)}`` from a prepare_slabs
    reply, keeping only slabs that were asked for; ValueError when the
    reply does not follow the contract."""
    try:
        endpoint = reply['endpoint']
        slabs = reply['slabs']
        result = {}
        for slab in slabs:
            index = int(slab['index'])
            if index in indexes:
                result[index] = (str(endpoint), int(slab['remote_addr']),
                                 int(slab['rkey']))
        return result
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError('malformed prepare_slabs reply %r: %s' % (
            reply, exc))


def begin_release(ctxt, grant_uuid, consumer_host=None):
    """Make active grant ``grant_uuid`` releasing, in one compare-and-set:
    of concurrent callers one only wins, and only the winner has the
    release carried out (Reservoir.finish_release). Returns ``(won,
    grant)``; a grant that is not active, or with ``consumer_host`` one
    consumed by another host (its VM was live-migrated there), is left as
    it is (won False). Raises NotFound, or Conflict while the grant is
    still being set up or its VM migrates (the VM is missing from one of
    the two hosts then, and its pages are on the donors only)."""
    grant = db_grants.grant_get(ctxt, grant_uuid)
    if grant.status == 'active':
        migration = db_migrations.migration_running_for(
            ctxt, grant.instance_uuid)
        if migration is not None:
            raise exceptions.Conflict(reason=(
                'instance %s of grant %s is in migration %s (%s); the grant '
                'can be released once it ends' % (
                    grant.instance_uuid, grant_uuid, migration.uuid,
                    migration.status)))
    if consumer_host is not None and consumer_host != grant.consumer_host:
        LOG.info('Grant %s not released for %s: its VM lives on %s',
                 grant_uuid, consumer_host, grant.consumer_host)
        return False, grant
    won, grant = db_grants.grant_compare_and_set(ctxt, grant_uuid, 'active',
                                                 'releasing')
    if not won and grant.status == 'pending':
        raise exceptions.Conflict(reason=(
            'grant %s is pending: it can be released once it is active'
            % grant_uuid))
    return won, grant


def begin_reclaim(ctxt, donor_host, size_mb):
    """Take at least ``size_mb`` MiB (whole slabs) of what ``donor_host``
    lends, newest grants first, for a reclaim: the slabs go reclaiming,
    each taken by one caller only (Reservoir.finish_reclaim carries the
    reclaim out). Returns ``({grant uuid: [index, ...]}, MiB)``; raises
    InvalidParameter for a bad size, NotFound for an unknown host."""
    _check_size(size_mb)
    db_hosts.host_get(ctxt, donor_host)
    return db_grants.slabs_take_for_reclaim(ctxt, donor_host, size_mb)


class Reservoir:
    """Allocates, releases and reclaims grants (the Scheduler RPC API 1.2
    calls) with [reservoir]'s options.

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

    def _free(self, ctxt, host, grant_uuid, indexes=None):
        """Ask ``host`` once to free slabs of a grant; False (logged) when
        it could not be told."""
        return self._free_error(ctxt, host, grant_uuid, indexes, 1) is None

    def _free_error(self, ctxt, host, grant_uuid, indexes, attempts):
        """Ask ``host`` up to ``attempts`` times to free slabs of a grant
        (``indexes``, None: all); None when it did, else the error
        (logged)."""
        try:
            self._ask('free_slabs', ctxt, host, attempts, grant_uuid,
                      indexes)
            return None
        except Exception as exc:
            LOG.warning('Donor %s did not free slabs %s of grant %s: %s',
                        host, 'all' if indexes is None else indexes,
                        grant_uuid, exc)
            return exc

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
        RemoteMemoryUnavailable says why."""
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
        asked, so the API may call it and answer at once."""
        _check_size(size_mb)
        slab_mb = self.group.slab_size_mb
        wanted = math.ceil(size_mb / slab_mb)
        select = self._select(consumer_host)

        def plan(instance, held_mb, donors):
            return self._plan(instance, held_mb, donors, wanted, select)

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
            try:
                self._set_up(ctxt, grant, keep_failed=True)
            except RemoteMemoryUnavailable:
                pass    # the grant is failed with the reason, logged

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

    def _plan(self, instance, held_mb, donors, wanted, select):
        """The reservation of a grant (see memagg.db.grants.grant_reserve)."""
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
        assignments = select(count, donors)
        placed = sum(n for _, n in assignments)
        if placed == 0:
            raise RemoteMemoryUnavailable(reason=self._no_donor(
                instance.host, donors))
        if placed < count:
            reasons.append('the donors had room for %d of %d slabs (%s)' % (
                placed, count, self._describe(donors)))
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
        pending = _by_donor(grant.slabs)
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
                moved = db_grants.grant_move_slabs(
                    ctxt, grant.uuid, unmet, self._reported_since(), tried,
                    select)
                pending = _by_donor(s for s in moved.slabs
                                    if s.index in unmet)
        kept = self._keep_contiguous(ctxt, grant.uuid, prepared, notes)
        if not kept:
            reason = '; '.join(notes) or 'no donor prepared a slab'
            self._abandon(ctxt, grant.uuid, prepared, reason, keep_failed)
            raise RemoteMemoryUnavailable(reason=reason)
        partial = len(kept) < wanted
        return db_grants.grant_prepared(ctxt, grant.uuid, kept, partial,
                                        '; '.join(notes) or None)

    def _prepare_on(self, ctxt, grant, host, indexes, notes):
        """One donor's prepare_slabs: the slabs it prepared."""
        try:
            reply = self._call('prepare_slabs', ctxt, host, grant.uuid,
                               grant.secret, grant.slab_size_mb, indexes)
            got = _prepared_slabs(reply, set(indexes))
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

    def _keep_contiguous(self, ctxt, grant_uuid, prepared, notes):
        """The prepared slabs 0..k-1 (a grant maps offsets to slabs by
        division, so it has no holes); prepared slabs past a hole are
        freed. Returns {index: (endpoint, remote_addr, rkey)}."""
        every = {i: v for slabs in prepared.values() for i, v in slabs.items()}
        count = 0
        while count in every:
            count += 1
        for host, slabs in prepared.items():
            beyond = sorted(i for i in slabs if i >= count)
            if beyond:
                notes.append('slabs %s of %s freed: slab %d could not be '
                             'set up' % (beyond, host, count))
                self._free(ctxt, host, grant_uuid, beyond)
                for index in beyond:
                    del slabs[index]
        return {i: every[i] for i in range(count)}

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
                       grant_dict(grant))
        except Exception as exc:
            reason = '%s could not attach it: %s' % (grant.consumer_host,
                                                     exc)
            LOG.warning('Grant %s failed: %s', grant.uuid, reason)
            unfreed = {host for host in _by_donor(grant.slabs)
                       if not self._free(ctxt, host, grant.uuid)}
            db_grants.grant_set_status(ctxt, grant.uuid, 'failed', 'released',
                                       reason=reason, unfreed=unfreed)
            raise RemoteMemoryUnavailable(reason=reason)
        grant = db_grants.grant_set_status(ctxt, grant.uuid, 'active',
                                           'active', expected=('pending',))
        LOG.info('Grant %s: %d MiB on %s for instance %s on %s%s',
                 grant.uuid, grant.granted_mb,
                 ', '.join('%s (%d slabs)' % (h, len(i)) for h, i in
                           _by_donor(grant.slabs).items()),
                 grant.instance_uuid, grant.consumer_host,
                 ' (partial: %s)' % grant.reason if grant.partial else '')
        return grant_dict(grant)

    # -- release ----------------------------------------------------------

    def _ask(self, method, ctxt, host, attempts, *args):
        """Compute RPC ``method`` on ``host``, asked up to ``attempts``
        times (waits from [reservoir] operation_retry_interval, doubling);
        the reply, or the last error raised."""
        policy = retry.Policy(attempts, self.group.operation_retry_interval,
                              doubling=True)
        return retry.call(self._call, method, ctxt, host, *args,
                          what='Asking %s to %s' % (host, method),
                          policy=policy, retry_on=Exception,
                          sleep=self.sleep)

    def _attempts(self, attempts):
        return self.group.operation_attempts if attempts is None \
            else attempts

    def release(self, ctxt, grant_uuid, consumer_host=None):
        """Release active grant ``grant_uuid`` now (each host asked once):
        the consumer reclaims every slab (its pages go to its local copy),
        the donors free them. Releasing a grant that is not active changes
        nothing. Returns the grant dict; Conflict while the grant is still
        being set up or its VM migrates (the VM is missing from one of the
        two hosts then, and its pages are on the donors only).

        ``consumer_host`` is the host asking, when a consumer asks for its
        VM is gone: a grant consumed elsewhere now (the VM was
        live-migrated there) is left as it is."""
        won, grant = begin_release(ctxt, grant_uuid, consumer_host)
        if not won:
            return grant_dict(grant)
        return self.finish_release(ctxt, grant_uuid, attempts=1)

    def finish_release(self, ctxt, grant_uuid, attempts=None):
        """Carry out the release of grant ``grant_uuid``, which
        :func:`begin_release` made releasing: the consumer reclaims every
        slab, the donors free theirs, each host asked up to ``attempts``
        times ([reservoir] operation_attempts by default). The grant ends
        released, or failed with the reason when a host never answered
        (slabs a donor did not confirm freeing stay releasing and are
        freed again by :meth:`recover`). A grant that is not releasing is
        left as it is. Returns the grant dict."""
        attempts = self._attempts(attempts)
        with self.claim('grant-%s' % grant_uuid) as claimed:
            grant = db_grants.grant_get(ctxt, grant_uuid)
            if not claimed or grant.status != 'releasing':
                return grant_dict(grant)
            failures = []
            try:
                self._ask('reclaim_slabs', ctxt, grant.consumer_host,
                          attempts, grant_uuid, None)
            except Exception as exc:
                # Its local copy holds every page written: freeing the
                # donors loses nothing even when the consumer did not hear
                # of it.
                failures.append('consumer %s did not reclaim the slabs: %s'
                                % (grant.consumer_host, exc))
            holding = [s for s in grant.slabs
                       if s.status in ('active', 'releasing')]
            unfreed = set()
            for host in _by_donor(holding):
                error = self._free_error(ctxt, host, grant_uuid, None,
                                         attempts)
                if error is not None:
                    unfreed.add(host)
                    failures.append('donor %s did not free its slabs: %s'
                                    % (host, error))
            reason = None
            if failures:
                reason = 'release: %s (asked %d times each)%s' % (
                    '; '.join(failures), attempts,
                    '; the slabs not freed are freed again at the next '
                    'start of memagg-scheduler' if unfreed else '')
            try:
                grant = db_grants.grant_set_status(
                    ctxt, grant_uuid, 'failed' if failures else 'released',
                    'released', reason=reason, expected=('releasing',),
                    unfreed=unfreed)
            except exceptions.Conflict:
                grant = db_grants.grant_get(ctxt, grant_uuid)
        if failures:
            LOG.warning('Grant %s: %s', grant_uuid, reason)
        else:
            LOG.info('Grant %s released', grant_uuid)
        return grant_dict(grant)

    # -- reclaim ----------------------------------------------------------

    def reclaim(self, ctxt, donor_host, size_mb):
        """Take back at least ``size_mb`` MiB (whole slabs) that
        ``donor_host`` lends, newest grants first, now (each host asked
        once): each consumer reclaims its slabs, then the donor frees
        them. Returns the MiB reclaimed (less when the host lends less, or
        a consumer failed)."""
        taken, _mb = begin_reclaim(ctxt, donor_host, size_mb)
        reclaimed = self.finish_reclaim(ctxt, donor_host, taken, attempts=1)
        LOG.info('Reclaimed %d MiB of %d MiB asked for by %s', reclaimed,
                 size_mb, donor_host)
        return reclaimed

    def finish_reclaim(self, ctxt, donor_host, slabs, attempts=None):
        """Carry out a reclaim :func:`begin_reclaim` started: ``slabs``
        maps grant uuid -> indexes on ``donor_host``, reclaiming. Each
        consumer reclaims its slabs, then the donor frees them, each host
        asked up to ``attempts`` times; a consumer that never answers
        keeps its slabs (active again, the grant's reason says why).
        Slabs no longer reclaiming are skipped. Returns the MiB
        reclaimed."""
        attempts = self._attempts(attempts)
        reclaimed = 0
        for grant_uuid, indexes in slabs.items():
            with self.claim('grant-%s' % grant_uuid) as claimed:
                if claimed:
                    reclaimed += self._reclaim_grant(
                        ctxt, donor_host, grant_uuid, indexes, attempts)
        return reclaimed

    def _reclaim_grant(self, ctxt, donor_host, grant_uuid, indexes,
                       attempts):
        try:
            grant = db_grants.grant_get(ctxt, grant_uuid)
        except exceptions.NotFound:
            return 0
        indexes = sorted(s.index for s in grant.slabs
                         if s.index in indexes and s.donor_host == donor_host
                         and s.status == 'reclaiming')
        if not indexes:
            return 0
        try:
            self._ask('reclaim_slabs', ctxt, grant.consumer_host, attempts,
                      grant_uuid, indexes)
        except Exception as exc:
            reason = ('reclaim of slabs %s from %s failed: consumer %s did '
                      'not reclaim them (asked %d times): %s; they stay '
                      'lent' % (indexes, donor_host, grant.consumer_host,
                                attempts, exc))
            LOG.warning('Grant %s: %s', grant_uuid, reason)
            if db_grants.grant_slabs_reclaim_failed(ctxt, grant_uuid,
                                                    indexes, reason):
                return 0
            # Released meanwhile: its pages went to the local copy, the
            # donor may free them.
        error = self._free_error(ctxt, donor_host, grant_uuid, indexes,
                                 attempts)
        taken = db_grants.grant_slabs_reclaimed(
            ctxt, grant_uuid, indexes,
            status='reclaimed' if error is None else 'releasing',
            reason=None if error is None else (
                'reclaim of slabs %s: donor %s did not free them (asked %d '
                'times): %s; they are freed again at the next start of '
                'memagg-scheduler' % (indexes, donor_host, attempts, error)))
        return taken if error is None else 0

    # -- recovery ---------------------------------------------------------

    def pending_grants(self, ctxt):
        """The uuids of the grants pending now: at a start, those a
        previous run left half set up."""
        return [g.uuid for g in db_grants.grants_in_status(ctxt, ('pending',))]

    def recover(self, ctxt, grant_uuids):
        """Clean up the pending grants ``grant_uuids`` a previous run or a
        dead worker left (free their slabs, mark them failed; those another
        live worker claims are left to it), carry out the releases and
        reclaims left unfinished, and free again the slabs whose donors did
        not confirm they freed them."""
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

    def _recover_grant(self, ctxt, uuid):
        grant = db_grants.grant_get(ctxt, uuid)
        if grant.status != 'pending':
            return
        unfreed = {host for host in _by_donor(grant.slabs)
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
