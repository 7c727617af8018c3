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

"""Grants that follow their VM's live migration: metadata-only migration
(ALGORITHMS.md §5).

A VM's pages on donors never cross the wire: before Nova is asked, the
moves of its slabs between the tiers under way end (none starts while it
migrates), its slabs in the source's local copy only (the slow tier) are
promoted to donors, and then the destination's memagg-compute has its
memagg-swapd serve each of the VM's grants from the same donors (compute
RPC adopt_grant: the slab table and key, nothing else), at the socket
path the domain's XML names. When the
migration succeeded, the grant's consumer becomes the destination, the
destination starts rebuilding its durability copy from the donors in the
background (rebuild_grant: not before, as the rebuild would compete with
the migration's copy for the CPU and the network), the source drops its
export, and the rebuild is followed here until it is done. When it
failed, the destination drops what it adopted and the source, which never
stopped serving, keeps the grant. While the migration runs, the
destination is asked at each look whether it still serves every grant;
when it does not (its memagg-swapd died), the migration is aborted before
the switch-over, so the VM never runs where its swap disk is gone.

Every step is idempotent, so a scheduler restarted mid-migration does
them again from the DB.
"""
import time

from oslo_log import log as logging

from memagg.common import exceptions
from memagg.compute import rpcapi as compute_rpcapi
from memagg.db import grants as db_grants
from memagg.db import instances as db_instances
from memagg.db import migrations as db_migrations
from memagg.db import tier_moves as db_tier_moves
from memagg.scheduler import grant_forms

LOG = logging.getLogger(__name__)


def _slabs_in(states, statuses):
    """``{grant uuid: [index, ...]}`` of the slabs in ``statuses``, of
    ``states`` as memagg.db.tier_moves.slabs_of_migrating_instance gives
    them; grants without any left out."""
    found = {}
    for uuid, where in states.items():
        indexes = sorted(i for status in statuses
                         for i in where.get(status, ()))
        if indexes:
            found[uuid] = indexes
    return found


class GrantMove:
    """The grants of one migration's VM, from its source to its
    destination. ``compute`` is the compute RPC API (ComputeAPI 1.3);
    each call is bounded by ``conf``'s [reservoir] prepare_timeout.
    ``promote(context, grant_uuid, consumer_host, migration_id)`` promotes
    a grant's slabs in the local copy only to donors and returns the
    indexes on donors (Reservoir.promote_for_migration); None: such slabs
    keep the VM where it is."""

    def __init__(self, context, migration, conf, compute=None,
                 promote=None):
        self.context = context
        self.migration = migration
        self.conf = conf
        self._compute = compute
        self._promote = promote
        self.vm = migration.instance_uuid
        self.source = migration.source_host
        self.dest = migration.dest_host

    def _grants(self, consumer):
        return db_grants.grants_of_instance(self.context, self.vm, consumer)

    def _call(self, method, host, *args, timeout=None):
        # Made on first use: a VM without grants needs no RPC.
        if self._compute is None:
            self._compute = compute_rpcapi.ComputeAPI()
        return getattr(self._compute, method)(
            self.context, host, *args,
            timeout=timeout or self.conf.reservoir.prepare_timeout)

    def prepare(self):
        """Have the destination serve every grant of the VM; record the
        VM's remote memory and share. Returns None, or why the migration
        cannot go on (what the destination adopted is dropped again)."""
        grants = self._grants(self.source)
        if not grants:
            db_migrations.migration_record(self.context, self.migration.id,
                                           remote_mb=0, remote_share=0.0)
            return None
        problem = self._onto_donors()
        if problem is not None:
            return problem
        grants = self._grants(self.source)
        remote_mb = 0
        sealed = {}
        for grant in grants:
            try:
                status = self._call('grant_status', self.source, grant.uuid)
            except Exception as exc:
                LOG.warning('Remote memory of grant %s on %s unknown: %s',
                            grant.uuid, self.source, exc)
                continue
            remote_mb += status['stored_mb']
            sealed[grant.uuid] = status.get('sealed', False)
        self._record_share(remote_mb)
        for grant in grants:
            try:
                self._adopt(grant, sealed.get(grant.uuid))
            except Exception as exc:
                self.abandon()
                return ('destination %s could not serve grant %s from its '
                        'donors: %s' % (self.dest, grant.uuid,
                                        grant_forms.remote_reason(exc)))
        LOG.info('Migration %s: %s serves the %d grant(s) of %s (%d MiB '
                 'on donors)', self.migration.uuid, self.dest, len(grants),
                 self.vm, remote_mb)
        return None

    def _onto_donors(self):
        """Have every slab of the VM's grants on a donor: the destination
        reads from the donors what its local copy lacks, so a page in the
        source's local copy only would never reach it. Waits for the moves
        between the tiers under way (none starts while the VM migrates),
        then promotes the slabs in the local copy only. Returns None, or
        why the VM cannot go (after [consolidation] migration_timeout s
        of moves under way, or slabs no donor has room for)."""
        opts = self.conf.consolidation
        deadline = time.monotonic() + opts.migration_timeout
        while True:
            states = db_tier_moves.slabs_of_migrating_instance(
                self.context, self.vm, self.source)
            moving = _slabs_in(states, db_tier_moves.MOVING)
            if not moving:
                break
            if time.monotonic() >= deadline:
                return ('slabs %s of the VM\'s grants were still moving '
                        'between the tiers after %d s; migrate again once '
                        'they are moved' % (moving, opts.migration_timeout))
            LOG.info('Migration %s waits for slabs %s to finish moving '
                     'between the tiers', self.migration.uuid, moving)
            time.sleep(opts.poll_interval)
        stranded = _slabs_in(states, ('pending', 'releasing'))
        if stranded:
            # A reclaim whose donor did not free them: their pages are in
            # the local copy only, and they are freed there at the next
            # scheduler start; no promotion takes them.
            return ('slabs %s of the VM\'s grants are in the local copy of '
                    '%s only, waiting to be freed on their donors; migrate '
                    'again once memagg-scheduler has freed them' % (
                        stranded, self.source))
        for uuid, local in _slabs_in(states, ('reclaimed',)).items():
            on_donors = (self._promote(self.context, uuid, self.source,
                                       self.migration.id)
                         if self._promote is not None else [])
            left = sorted(set(local) - set(on_donors))
            if left:
                return ('grant %s has slabs %s in the local copy of %s '
                        'only (the slow tier) that could not be promoted '
                        'to a donor (no donor had room, or the copy failed, '
                        'as memagg-scheduler\'s log says): they cannot '
                        'follow the VM without a copy of its memory; free '
                        'memory on donors, or release the grant, and '
                        'migrate again' % (uuid, left, self.source))
            LOG.info('Migration %s: slabs %s of grant %s promoted to donors '
                     'first', self.migration.uuid, local, uuid)
        return None

    def _adopt(self, grant, sealed):
        """Have the destination serve ``grant``; a sealed grant's page key
        goes from the source's memagg-swapd to the destination's sealed
        for the destination's key offer, so that only public keys and
        ciphertext pass here. ``sealed`` None: the source did not say,
        and the destination could not read the pages."""
        if sealed is None:
            raise exceptions.ServiceUnavailable(
                reason='the source %s did not say whether grant %s is '
                       'sealed' % (self.source, grant.uuid))
        export = self._call('adopt_grant', self.dest,
                            dict(grant_forms.grant_dict(grant),
                                 sealed=sealed))
        if sealed:
            wrapped = self._call('wrap_page_key', self.source, grant.uuid,
                                 export['key_offer'])['wrapped']
            self._call('install_page_key', self.dest, grant.uuid, wrapped)

    def destination_problem(self, timeout):
        """Why the destination could not serve the migrating VM's grants
        now (its memagg-swapd gone, an export missing), or None. A
        memagg-compute that does not answer within ``timeout`` s is not
        taken for a broken data path."""
        for grant in self._grants(self.source):
            try:
                self._call('grant_status', self.dest, grant.uuid,
                           timeout=timeout)
            except exceptions.RPCTimeout:
                continue
            except Exception as exc:
                return ('destination %s no longer serves grant %s: %s'
                        % (self.dest, grant.uuid,
                           grant_forms.remote_reason(exc)))
        return None

    def _record_share(self, remote_mb):
        try:
            instance = db_instances.instance_get(self.context, self.vm)
            resident = instance.current_mb or instance.booked_mb or 0
        except exceptions.NotFound:
            resident = 0
        total = remote_mb + resident
        db_migrations.migration_record(
            self.context, self.migration.id, remote_mb=remote_mb,
            remote_share=round(remote_mb / total, 4) if total else None)

    def finish(self):
        """After a successful migration: the destination consumes the
        grants and starts rebuilding their copies, the source drops its
        exports; record what the hypervisor says the migration cost and
        what the destination's copy still lacks. Returns the costs
        recorded ({} without grants)."""
        moved = self._grants(self.source) + self._grants(self.dest)
        for grant in moved:
            db_grants.grant_move(self.context, grant.uuid, self.source,
                                 self.dest)
        left = self.rebuild_copies() if moved else None
        for grant in moved:
            try:
                self._call('drop_export', self.source, grant.uuid)
            except Exception as exc:
                # The source drops it itself once it sees the VM gone.
                LOG.warning('Source %s did not drop its export of grant %s '
                            'yet: %s', self.source, grant.uuid, exc)
        if not moved:
            return {}
        # memagg-compute runs on both hosts of a VM with grants: the
        # destination's tells what libvirt measured.
        costs = self._hypervisor_costs()
        costs['local_copy_left_mb'] = left
        db_migrations.migration_record(self.context, self.migration.id,
                                       **costs)
        return costs

    def _hypervisor_costs(self):
        try:
            stats = self._call('migration_stats', self.dest, self.vm)
        except Exception as exc:
            LOG.info('No hypervisor statistics of migration %s: %s',
                     self.migration.uuid, exc)
            return {}
        if not stats:
            return {}
        return {'downtime_ms': stats.get('downtime_ms'),
                'bytes_transferred': stats.get('data_bytes')
                or stats.get('memory_bytes')}

    def abandon(self):
        """After a failed migration: the destination drops what it
        adopted (the source never stopped serving)."""
        for grant in self._grants(self.source):
            try:
                self._call('drop_export', self.dest, grant.uuid)
            except Exception as exc:
                LOG.warning('Destination %s did not drop its export of '
                            'grant %s: %s; it drops it itself once the VM '
                            'is missing there', self.dest, grant.uuid, exc)

    def rebuild_copies(self):
        """Have the destination rebuild the durability copies of the
        grants it now consumes (started once: the call is idempotent, and
        made again at each look so that a rebuild a failed call did not
        start starts later); MiB still to rebuild (unknown grants count as
        done), None when nobody answered."""
        left, answered = 0, False
        for grant in self._grants(self.dest):
            try:
                left += self._call('rebuild_grant', self.dest,
                                   grant.uuid)['local_copy_left_mb']
                answered = True
            except exceptions.NotFound:
                answered = True
            except Exception as exc:
                LOG.info('Copy of grant %s on %s: no answer: %s', grant.uuid,
                         self.dest, exc)
        return left if answered else None

    def follow_copy(self, left, interval, timeout):
        """Record the destination's copy rebuild (``left`` MiB to go) every
        ``interval`` s until it is done, or ``timeout`` s have passed (the
        next scheduler start follows it again). Returns the MiB left."""
        deadline = time.monotonic() + timeout
        while left:
            time.sleep(min(interval, max(0.0, deadline - time.monotonic())))
            now_left = self.rebuild_copies()
            if now_left is not None:
                left = now_left
                db_migrations.migration_record(self.context, self.migration.id,
                                               local_copy_left_mb=left)
            if time.monotonic() >= deadline:
                break
        if not left:
            LOG.info('Migration %s: the durability copy of %s is rebuilt '
                     'on %s', self.migration.uuid, self.vm, self.dest)
        return left
