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

"""Giving lent memory back: a grant's release (its consumer gives it all
back) and a reclaim (a donor takes slabs back), for the reservoir
(memagg.scheduler.reservoir, which holds the grants' allocation).

Each is begun by a compare-and-set in the DB (:func:`begin_release`: the
grant goes from active to releasing; :func:`begin_reclaim`: each slab from
active to reclaiming), so that of concurrent requests one only carries
each out and a slab is freed once. The API begins them and answers;
memagg-scheduler carries them out after (``finish_release``,
``finish_reclaim`` of :class:`ReturnsMixin`), asking each host up to
[reservoir] operation_attempts times with growing waits
(memagg.common.retry); a release a host never answers ends failed with the
reason, a reclaim its consumer never answers gives the slabs back to the
grant with the reason.
"""
from oslo_log import log as logging

from memagg.common import exceptions
from memagg.common import retry
from memagg.db import grants as db_grants
from memagg.db import hosts as db_hosts
from memagg.scheduler import grant_forms

LOG = logging.getLogger(__name__)


def begin_release(ctxt, grant_uuid, consumer_host=None):
    """Make active grant ``grant_uuid`` releasing, in one transaction
    (db_grants.grant_begin_release): of concurrent callers one only wins,
    and only the winner has the release carried out
    (Reservoir.finish_release). Returns ``(won, grant)``; a grant that is
    not active, or with ``consumer_host`` one consumed by another host
    (its VM was live-migrated there), is left as it is (won False).
    Raises NotFound, or Conflict while the grant is still being set up or
    its VM migrates (the VM is missing from one of the two hosts then,
    and its pages are on the donors only)."""
    won, grant = db_grants.grant_begin_release(ctxt, grant_uuid,
                                               consumer_host)
    if not won and grant.status == 'active':
        LOG.info('Grant %s not released for %s: its VM lives on %s',
                 grant_uuid, consumer_host, grant.consumer_host)
        return False, grant
    if not won and grant.status == 'pending':
        raise exceptions.Conflict(reason=(
            'grant %s is pending: it can be released once it is active'
            % grant_uuid))
    return won, grant


def begin_reclaim(ctxt, donor_host, size_mb):
    """Take at least ``size_mb`` MiB (whole slabs) of what ``donor_host``
    lends, from the VMs most over their L1 share first (as
    db_grants.slabs_take_for_reclaim), for a reclaim: the slabs go
    reclaiming,
    each taken by one caller only (Reservoir.finish_reclaim carries the
    reclaim out). Returns ``({grant uuid: [index, ...]}, MiB)``; raises
    InvalidParameter for a bad size, NotFound for an unknown host."""
    grant_forms.check_size(size_mb)
    db_hosts.host_get(ctxt, donor_host)
    return db_grants.slabs_take_for_reclaim(ctxt, donor_host, size_mb)


class ReturnsMixin:
    """The release and reclaim side of the Reservoir: it asks hosts
    through ``self._call`` (compute RPC) and waits with ``self.sleep``."""

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
            return grant_forms.grant_dict(grant)
        return self.finish_release(ctxt, grant_uuid, attempts=1,
                                   vm_gone=consumer_host is not None)

    def finish_release(self, ctxt, grant_uuid, attempts=None,
                       vm_gone=False):
        """Carry out the release of grant ``grant_uuid``, which
        :func:`begin_release` made releasing: the consumer reclaims every
        slab, the donors free theirs, each host asked up to ``attempts``
        times ([reservoir] operation_attempts by default). The grant ends
        released, or failed with the reason when a host never answered
        (slabs a donor did not confirm freeing stay releasing and are
        freed again by :meth:`recover`). A grant that is not releasing is
        left as it is. A consumer that refuses (its local copy lacks pages
        only the donors have) keeps the grant, active again with the
        reason; but not when ``vm_gone``: the consumer asked, its VM is
        gone, and nobody will read the pages. Returns the grant dict."""
        attempts = self._attempts(attempts)
        with self.claim('grant-%s' % grant_uuid) as claimed:
            grant = db_grants.grant_get(ctxt, grant_uuid)
            if not claimed or grant.status != 'releasing':
                return grant_forms.grant_dict(grant)
            failures = []
            try:
                self._ask('reclaim_slabs', ctxt, grant.consumer_host,
                          attempts, grant_uuid, None)
            except Exception as exc:
                if grant_forms.refused(exc) and not vm_gone:
                    return self._release_refused(ctxt, grant, exc)
                # Its local copy holds every page written: freeing the
                # donors loses nothing even when the consumer did not hear
                # of it.
                failures.append('consumer %s did not reclaim the slabs: %s'
                                % (grant.consumer_host, exc))
            holding = [s for s in grant.slabs
                       if s.status in ('active', 'releasing')]
            unfreed = set()
            for host in grant_forms.by_donor(holding):
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
        return grant_forms.grant_dict(grant)

    def _release_refused(self, ctxt, grant, exc):
        """The consumer answered that its local copy lacks pages only the
        donors have: they keep the grant, active again with the reason."""
        reason = ('release refused by consumer %s: %s; the grant stays '
                  'active, its donors keep its slabs' % (
                      grant.consumer_host, grant_forms.remote_reason(exc)))
        LOG.warning('Grant %s: %s', grant.uuid, reason)
        _, grant = db_grants.grant_release_refused(ctxt, grant.uuid, reason)
        return grant_forms.grant_dict(grant)

    # -- reclaim ----------------------------------------------------------

    def reclaim(self, ctxt, donor_host, size_mb):
        """Take back at least ``size_mb`` MiB (whole slabs) that
        ``donor_host`` lends, from the VMs most over their L1 share first,
        now (each host asked once): each consumer reclaims its slabs, then
        the donor frees them. Returns the MiB reclaimed (less when the host
        lends less, or a consumer failed)."""
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
