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

"""A grant's slabs between the tiers (ALGORITHMS.md §8): on a donor (L1,
active) or in the consumer's local copy only (L2, reclaimed).

A demotion is a reclaim its consumer asked for: its slabs go from active
to reclaiming here, and memagg.scheduler.grant_returns carries it out. A
promotion gives reclaimed slabs a donor again: they go promoting (holding
the donor's memory) with the donor chosen while the donors' rows are
locked, then active once the consumer copied them there, or reclaimed
again when it did not. Each step is a conditional update of the slab, so
that of concurrent callers one only moves a slab.
"""
from oslo_utils import timeutils
import sqlalchemy as sa

from memagg.common import exceptions
from memagg.db import facade
from memagg.db import grants as db_grants
from memagg.db import migrations as db_migrations
from memagg.db.sqlalchemy import models


def _active_grant(session, grant_uuid, consumer_host, migration_id=None):
    """The grant's row, locked shared: the status read is the committed
    one, and a release or a migration's look at the slabs waits for this
    transaction. Conflict unless it is active and consumed by
    ``consumer_host``, and while its VM is in a migration other than
    ``migration_id`` (the one that may move them: its destination reads
    from the donors what its local copy lacks, so no slab may leave them,
    and one that comes back later would not be in its table)."""
    grant = session.query(models.Grant).filter_by(
        uuid=grant_uuid).with_for_update(read=True).first()
    if grant is None:
        raise exceptions.NotFound(resource='Grant', id=grant_uuid)
    if grant.status != 'active' or grant.consumer_host != consumer_host:
        raise exceptions.Conflict(reason=(
            'grant %s is %s on %s: its slabs change tier only while it is '
            'active on its consumer %s' % (grant_uuid, grant.status,
                                           grant.consumer_host,
                                           consumer_host)))
    busy = db_migrations.migration_busy_locked(session, grant.instance_uuid)
    if busy is not None and busy.id != migration_id:
        raise exceptions.Conflict(reason=(
            'instance %s of grant %s is in migration %s (%s); its slabs '
            'change tier once it ends' % (grant.instance_uuid, grant_uuid,
                                          busy.uuid, busy.status)))
    return grant


def _take(session, grant, indexes, expected, values):
    """Move the slabs ``indexes`` of ``grant`` in status ``expected`` to
    ``values``, each in a conditional UPDATE; the indexes moved."""
    moved = []
    for index in sorted(set(indexes)):
        if session.execute(sa.update(models.Slab).where(
                models.Slab.grant_id == grant.id,
                models.Slab.index == index,
                models.Slab.status == expected).values(
                dict(values, updated_at=timeutils.utcnow())).execution_options(
                synchronize_session=False)).rowcount == 1:
            moved.append(index)
    return moved


@facade.retry_on_race
def slabs_take_for_demotion(context, grant_uuid, consumer_host, indexes):
    """Take the active slabs ``indexes`` of active grant ``grant_uuid``,
    consumed by ``consumer_host``, for a demotion: they go reclaiming.
    Returns ``{donor host: [index, ...]}`` of those taken (a slab a
    reclaim or release took meanwhile is not). NotFound, or Conflict when
    the grant is not active on that consumer."""
    with facade.writer().using(context) as session:
        grant = _active_grant(session, grant_uuid, consumer_host)
        donors = {s.index: s.donor_host for s in grant.slabs}
        taken = {}
        for index in _take(session, grant, indexes, 'active',
                           {'status': 'reclaiming'}):
            taken.setdefault(donors[index], []).append(index)
        return taken


@facade.retry_on_race
def slabs_begin_promotion(context, grant_uuid, consumer_host, indexes,
                          reported_since, select, migration_id=None):
    """Give the reclaimed slabs ``indexes`` of active grant ``grant_uuid``,
    consumed by ``consumer_host``, donors: with the rows of the hosts that
    may lend locked (memagg.db.grants.donors_available), the slabs, in
    index order, go promoting on hosts with room. A donor that still lends
    some of the grant's slabs takes back only those it lent before (it
    lends them again at their place in the grant's region; memagg-swapd
    gives a grant one region per donor); ``select(n_slabs, donors)``
    (``[(host, n)]``) places the others on donors that lend the grant
    nothing. Returns ``{donor host: [index, ...]}`` (empty when no donor
    has room). NotFound, or Conflict when the grant is not active on that
    consumer or its VM is in a migration other than ``migration_id``."""
    with facade.writer().using(context) as session:
        grant = _active_grant(session, grant_uuid, consumer_host,
                              migration_id)
        asked = set(indexes)
        wanted = sorted((s.index, s.donor_host, s.size_mb)
                        for s in grant.slabs
                        if s.index in asked and s.status == 'reclaimed')
        lending = {s.donor_host for s in grant.slabs
                   if s.status in db_grants.SLAB_HOLDING}
        donors = db_grants.donors_available(session, consumer_host,
                                            reported_since, ())
        room = dict(donors)
        placed = []
        for index, host, size_mb in wanted:
            if host in lending and room.get(host, 0) >= size_mb:
                room[host] -= size_mb
                placed.append((index, host))
        left = [index for index, host, _ in wanted if host not in lending]
        fresh = [(host, mb) for host, mb in donors if host not in lending]
        chosen = iter(left)
        for host, count in (select(len(left), fresh) if left and fresh
                            else []):
            placed += [(next(chosen), host) for _ in range(count)]
        taken = {}
        for index, host in sorted(placed):
            if _take(session, grant, [index], 'reclaimed', {
                    'status': 'promoting', 'donor_host': host,
                    'endpoint': None, 'remote_addr': None, 'rkey': 0}):
                taken.setdefault(host, []).append(index)
        return taken


@facade.retry_on_race
def slab_promotion_prepared(context, grant_uuid, index, endpoint,
                            remote_addr):
    """Record where the donor of promoting slab ``index`` of grant
    ``grant_uuid`` prepared it, before its consumer copies it there (a
    recovery finds it there). Returns whether the slab is still
    promoting."""
    with facade.writer().using(context) as session:
        grant = session.query(models.Grant).filter_by(
            uuid=grant_uuid).first()
        if grant is None:
            return False
        return bool(_take(session, grant, [index], 'promoting', {
            'status': 'promoting', 'endpoint': endpoint,
            'remote_addr': remote_addr}))


@facade.retry_on_race
def slabs_promoted(context, grant_uuid, indexes):
    """The promoting slabs ``indexes`` of grant ``grant_uuid`` are on
    their donors: active, and back in the grant's ``granted_mb``. Returns
    the indexes moved."""
    with facade.writer().using(context) as session:
        grant = session.query(models.Grant).filter_by(
            uuid=grant_uuid).with_for_update().first()
        if grant is None:
            return []
        size = {s.index: s.size_mb for s in grant.slabs}
        moved = _take(session, grant, indexes, 'promoting',
                      {'status': 'active'})
        grant.granted_mb += sum(size[i] for i in moved)
        return moved


@facade.retry_on_race
def slabs_promotion_failed(context, grant_uuid, indexes, reason):
    """The promoting slabs ``indexes`` of grant ``grant_uuid`` stay in
    the local copy (reclaimed again; the caller freed them on their
    donor); ``reason`` becomes the grant's. Returns the indexes moved."""
    with facade.writer().using(context) as session:
        grant = session.query(models.Grant).filter_by(
            uuid=grant_uuid).with_for_update().first()
        if grant is None:
            return []
        grant.reason = reason
        return _take(session, grant, indexes, 'promoting',
                     {'status': 'reclaimed'})


def slabs_promoting(context):
    """Promotions under way: ``{(grant uuid, donor host): [index,
    ...]}``."""
    return db_grants.slabs_in_status(context, 'promoting')


#: Slab states of an active grant while a move between the tiers is
#: under way.
MOVING = ('reclaiming', 'promoting')


def slabs_of_migrating_instance(context, instance_uuid, consumer_host):
    """Where the slabs of ``instance_uuid``'s active grants consumed by
    ``consumer_host`` are, for its migration: ``{grant uuid: {slab status:
    [index, ...]}}``. The grants' rows are locked exclusively first, so a
    move whose transaction took slabs before the migration was queued has
    committed and shows here (as MOVING), and one after sees the
    migration and is refused (``_active_grant``, and the reclaims of
    memagg.db.grants.slabs_take_for_reclaim)."""
    with facade.writer().using(context) as session:
        grants = session.query(models.Grant).filter(
            models.Grant.instance_uuid == instance_uuid,
            models.Grant.consumer_host == consumer_host,
            models.Grant.status == 'active').order_by(
            models.Grant.id).with_for_update().all()
        states = {}
        for grant in grants:
            where = states.setdefault(grant.uuid, {})
            # A locking read too: the committed rows, not a snapshot
            # taken before the locks were granted.
            for slab in session.query(models.Slab).filter_by(
                    grant_id=grant.id).order_by(
                    models.Slab.index).with_for_update(read=True):
                where.setdefault(slab.status, []).append(slab.index)
        return states
