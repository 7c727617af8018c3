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

"""Moving a grant's slabs between the tiers (ALGORITHMS.md §8), for the
reservoir (memagg.scheduler.reservoir): a consumer's tier policy
(memagg.compute.tiers) asks, memagg-scheduler carries the moves out.

* A demotion (L1 to L2) is a reclaim the consumer asked for
  (memagg.db.tier_moves.slabs_take_for_demotion): the consumer serves the
  slabs from its local copy, which always has their pages, and their
  donors free them (grant_returns).
* A promotion (L2 to L1) gives reclaimed slabs a donor again: chosen by
  the [reservoir] donor_selection plug-in among the hosts with room (the
  slabs go promoting, holding that memory), prepared there
  (``prepare_slabs``; a donor lends a grant's freed slab again at its
  address), recorded, then copied there by the consumer while its VM runs
  (``promote_slab``): active. A slab whose donor or consumer failed is
  freed on the donor and stays reclaimed, with the reason.

No slab moves while its VM migrates (the DB refuses), but for the
migration's own promotions: it waits for the moves under way, then
promotes the slabs still in the local copy only before the VM goes
(grant_moves). A scheduler stopped in the
middle finds promoting slabs at its next start
(:meth:`TierMovesMixin.recover_promotions`): those a donor had prepared
are copied there again (the consumer's ``promote_slab`` is idempotent),
the others are freed there and stay reclaimed.
"""
from oslo_log import log as logging

from memagg.common import exceptions
from memagg.db import grants as db_grants
from memagg.db import tier_moves as db_tier_moves
from memagg.scheduler import grant_forms

LOG = logging.getLogger(__name__)


class TierMovesMixin:
    """The tier side of the Reservoir: it asks hosts through
    ``self._call`` and ``self._ask`` and carries demotions out as
    reclaims (grant_returns.ReturnsMixin)."""

    def move_slabs(self, ctxt, grant_uuid, consumer_host, demote=(),
                   promote=()):
        """Demote the slabs ``demote`` of active grant ``grant_uuid``,
        consumed by ``consumer_host``, then promote the slabs ``promote``;
        slabs no longer in the state a move starts from are skipped.
        Returns ``{demoted: [index, ...], promoted: [index, ...]}``."""
        demoted, promoted = [], []
        with self.claim('grant-%s' % grant_uuid) as claimed:
            if not claimed:
                LOG.info('Slabs of grant %s not moved: another worker '
                         'claims the grant', grant_uuid)
                return {'demoted': demoted, 'promoted': promoted}
            try:
                # The DB refuses either move while the VM migrates.
                grant = db_grants.grant_get(ctxt, grant_uuid)
                if demote:
                    demoted = self._demote(ctxt, grant_uuid, consumer_host,
                                           demote)
                if promote:
                    promoted = self._promote(ctxt, grant, consumer_host,
                                             promote)
            except (exceptions.NotFound, exceptions.Conflict) as exc:
                LOG.info('Slabs of grant %s not moved: %s', grant_uuid, exc)
        if demoted or promoted:
            LOG.info('Grant %s: slabs %s demoted to %s\'s local copy, %s '
                     'promoted to donors', grant_uuid, demoted or 'none',
                     consumer_host, promoted or 'none')
        return {'demoted': demoted, 'promoted': promoted}

    def _demote(self, ctxt, grant_uuid, consumer_host, indexes):
        taken = db_tier_moves.slabs_take_for_demotion(
            ctxt, grant_uuid, consumer_host, indexes)
        attempts = self._attempts(None)
        demoted = []
        for donor, taken_indexes in taken.items():
            if self._reclaim_grant(ctxt, donor, grant_uuid, taken_indexes,
                                   attempts):
                demoted += taken_indexes
        return sorted(demoted)

    def promote_for_migration(self, ctxt, grant_uuid, consumer_host,
                              migration_id):
        """Promote every slab of active grant ``grant_uuid`` that is in
        ``consumer_host``'s local copy only, for migration
        ``migration_id`` of its VM (the only mover of its slabs while it
        runs: memagg.scheduler.grant_moves), to donors with room. Returns
        the indexes now on donors; ``[]`` when another worker claims the
        grant."""
        with self.claim('grant-%s' % grant_uuid) as claimed:
            if not claimed:
                return []
            grant = db_grants.grant_get(ctxt, grant_uuid)
            local = [s.index for s in grant.slabs if s.status == 'reclaimed']
            return self._promote(ctxt, grant, consumer_host, local,
                                 migration_id) if local else []

    def _promote(self, ctxt, grant, consumer_host, indexes,
                 migration_id=None):
        assigned = db_tier_moves.slabs_begin_promotion(
            ctxt, grant.uuid, consumer_host, indexes,
            self._reported_since(), self._select(consumer_host),
            migration_id)
        if not assigned:
            LOG.info('Grant %s: slabs %s stay in %s\'s local copy: no donor '
                     'has room', grant.uuid, sorted(indexes), consumer_host)
            return []
        promoted = []
        for donor, donor_indexes in assigned.items():
            promoted += self._promote_on(ctxt, grant, donor, donor_indexes)
        return sorted(promoted)

    def _promote_on(self, ctxt, grant, donor, indexes):
        """Prepare ``indexes`` on ``donor`` and have the consumer copy
        each there; the indexes promoted."""
        try:
            reply = self._call('prepare_slabs', ctxt, donor, grant.uuid,
                               grant.secret, grant.slab_size_mb, indexes)
            prepared = grant_forms.prepared_slabs(reply, set(indexes))
        except Exception as exc:
            # It may have prepared them before the failure (a lost reply).
            self._give_up(ctxt, grant.uuid, donor, indexes,
                          '%s failed to prepare them: %s' % (donor, exc))
            return []
        unprepared = [i for i in indexes if i not in prepared]
        if unprepared:
            self._give_up(ctxt, grant.uuid, donor, unprepared,
                          '%s has no room for them' % donor)
        promoted = []
        for index, (endpoint, remote_addr, _rkey) in sorted(prepared.items()):
            # Recorded first: a recovery copies it there again.
            if db_tier_moves.slab_promotion_prepared(
                    ctxt, grant.uuid, index, endpoint, remote_addr):
                promoted += self._copy(ctxt, grant, donor, index, endpoint,
                                       remote_addr)
        return promoted

    def _copy(self, ctxt, grant, donor, index, endpoint, remote_addr):
        """Have the consumer copy promoting slab ``index`` to ``donor``;
        ``[index]`` once it is active, else ``[]``."""
        slab = {'index': index, 'endpoint': endpoint,
                'remote_addr': remote_addr}
        try:
            self._call('promote_slab', ctxt, grant.consumer_host, grant.uuid,
                       slab)
        except Exception as exc:
            self._give_up(ctxt, grant.uuid, donor, [index],
                          'consumer %s did not copy it to %s: %s' % (
                              grant.consumer_host, donor, exc))
            return []
        return db_tier_moves.slabs_promoted(ctxt, grant.uuid, [index])

    def _give_up(self, ctxt, grant_uuid, donor, indexes, why):
        """Free promoting ``indexes`` on ``donor``: they stay reclaimed,
        with the reason."""
        reason = 'promotion of slabs %s: %s; they stay in the local copy' % (
            sorted(indexes), why)
        LOG.warning('Grant %s: %s', grant_uuid, reason)
        self._free(ctxt, donor, grant_uuid, sorted(indexes))
        db_tier_moves.slabs_promotion_failed(ctxt, grant_uuid, indexes,
                                             reason)

    def recover_promotions(self, ctxt):
        """Finish the promotions a stopped run left: a slab whose donor
        had prepared it is copied there again (``promote_slab`` is
        idempotent: a slab already there stays), the others are freed
        there and stay reclaimed."""
        for (uuid, donor), indexes in db_tier_moves.slabs_promoting(
                ctxt).items():
            with self.claim('grant-%s' % uuid) as claimed:
                if claimed:
                    self._recover_promotion(ctxt, uuid, donor, indexes)

    def _recover_promotion(self, ctxt, grant_uuid, donor, indexes):
        grant = db_grants.grant_get(ctxt, grant_uuid)
        slabs = {s.index: s for s in grant.slabs}
        unprepared = [i for i in indexes if not slabs[i].endpoint]
        if unprepared:
            self._give_up(ctxt, grant_uuid, donor, unprepared,
                          'memagg-scheduler stopped while its donor '
                          'prepared them')
        for index in sorted(set(indexes) - set(unprepared)):
            self._copy(ctxt, grant, donor, index, slabs[index].endpoint,
                       slabs[index].remote_addr)
