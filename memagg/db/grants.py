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

"""Grants of remote memory and their slabs (the global memory reservoir,
memagg.scheduler.reservoir), and the summary of what the reservoir lends.

A grant is reserved, with its slabs on their donors, in one transaction that
locks the instance and the donor hosts' rows, so that two allocations at once
can neither exceed a VM's cap nor lend a donor's memory twice.
"""
import sqlalchemy as sa

from memagg.common import exceptions
from memagg.db import facade
from memagg.db import migrations as db_migrations
from memagg.db.sqlalchemy import models
from memagg.notifications import grant as grant_notifications


#: Slab states that hold memory on the donor (reclaiming: a reclaim or a
#: demotion took it and frees it on its donor, memagg.scheduler.reservoir;
#: promoting: a donor is given it back, memagg.scheduler.tier_moves).
SLAB_HOLDING = ('pending', 'active', 'releasing', 'reclaiming', 'promoting')
#: Slab states of a grant's slabs, on a donor or in the local tier (L2).
SLAB_IN_GRANT = SLAB_HOLDING + ('reclaimed',)
#: Grant states whose slabs count against the VM's cap.
GRANT_HOLDING = ('pending', 'active')
#: The place of a grant's slabs a plan gives the local tier (L2): they are
#: served from the consumer's local copy only, status reclaimed, their
#: donor_host the consumer, until a promotion gives them a donor.
LOCAL_TIER = None

#: How GET lists grants: its model, the column a marker names, the
#: default sort, and the columns a request may filter and sort on.
LISTING = dict(model=models.Grant, key='uuid', sort=['created_at'],
               filters=('instance_uuid', 'consumer_host', 'status'),
               sort_keys=('created_at', 'granted_mb', 'requested_mb'))


def grant_get(context, uuid):
    return facade.get_one(context, models.Grant, 'uuid', uuid, 'Grant')


def donors_available(session, consumer_host, reported_since, exclude):
    """Lock the rows of the hosts that may lend now (reported at or after
    ``reported_since``, active, not ``consumer_host`` nor in ``exclude``)
    in name order; return ``[(name, available_mb)]``, where available is
    the reported lendable memory less the slabs the host holds."""
    hosts = session.query(models.Host).filter(
        models.Host.name != consumer_host,
        models.Host.name.not_in(list(exclude)),
        models.Host.state == 'active',
        models.Host.reported_at >= reported_since).order_by(
        models.Host.name).with_for_update().all()
    if not hosts:
        return []
    # A locking read: on MariaDB a plain one would read the transaction's
    # snapshot, from before a concurrent reservation committed.
    held = {}
    for host, size_mb in session.query(
            models.Slab.donor_host, models.Slab.size_mb).filter(
            models.Slab.donor_host.in_([h.name for h in hosts]),
            models.Slab.status.in_(SLAB_HOLDING)).with_for_update(read=True):
        held[host] = held.get(host, 0) + size_mb
    return [(h.name, h.lendable_mb - held.get(h.name, 0)) for h in hosts]


def local_room(session, consumer_host):
    """MiB ``consumer_host``'s local copies may still take for a new
    grant: the room it last reported (hosts.local_room_mb) less the slabs
    of its grants made since, whose copies that report did not count;
    None when it reported none. Its row is not locked (the donors' rows
    are, in name order): two reservations at once for one host may both
    count the same room, which its next report corrects."""
    host = session.query(models.Host).filter_by(name=consumer_host).first()
    if host is None or host.local_room_mb is None:
        return None
    since = sum(size for size, in session.query(models.Slab.size_mb).join(
        models.Grant).filter(
        models.Grant.consumer_host == consumer_host,
        models.Grant.status.in_(GRANT_HOLDING),
        models.Grant.created_at >= host.reported_at,
        models.Slab.status.in_(SLAB_IN_GRANT)).with_for_update(read=True))
    return max(0, host.local_room_mb - since)


def _slab_rows(assignments, indexes, size_mb, consumer_host):
    """Slab rows for ``assignments`` [(donor or LOCAL_TIER, n)], numbered
    by ``indexes`` in order: pending on their donors, or reclaimed on
    ``consumer_host`` (the local tier)."""
    indexes = iter(indexes)
    return [models.Slab(index=next(indexes), size_mb=size_mb,
                        donor_host=consumer_host if host is LOCAL_TIER
                        else host,
                        status='reclaimed' if host is LOCAL_TIER
                        else 'pending')
            for host, count in assignments for _ in range(count)]


@facade.retry_on_race
def grant_reserve(context, values, reported_since, plan):
    """Reserve a new grant, pending, and its slabs on their donors.

    ``values`` are Grant columns (``uuid``, ``instance_uuid``,
    ``consumer_host``, ``requested_mb``, ``slab_size_mb``) and ``secret``,
    the clear key, which is stored wrapped (memagg.db.secret_box).
    With the instance's and the donors' rows locked, ``plan(instance,
    held_mb, donors, local_room_mb)`` is called — ``held_mb`` is what the
    instance's pending and active grants hold, on donors or in the local
    tier, ``donors`` ``[(host, available_mb)]`` as in
    :func:`donors_available`, ``local_room_mb`` what the consumer's local
    copies may still take (:func:`local_room`) — and returns
    ``(assignments, reason)``:
    ``[(host, n_slabs)]``, host LOCAL_TIER for slabs in the local tier,
    and why it is less than requested or not all on donors (or None); it
    raises to store nothing. May run again when a concurrent writer wins.
    Returns the grant with its slabs (indexes from 0 in assignment order);
    NotFound when the instance is unknown.
    """
    values = dict(values)
    secret = values.pop('secret')
    facade.check_columns(models.Grant, values, 'grant')
    with facade.writer().using(context) as session:
        instance = session.query(models.Instance).filter_by(
            uuid=values['instance_uuid']).with_for_update().first()
        if instance is None:
            raise exceptions.NotFound(resource='Instance',
                                      id=values['instance_uuid'])
        held = sum(size for size, in session.query(
            models.Slab.size_mb).join(models.Grant).filter(
            models.Grant.instance_uuid == instance.uuid,
            models.Grant.status.in_(GRANT_HOLDING),
            models.Slab.status.in_(SLAB_IN_GRANT)).with_for_update(
            read=True))
        donors = donors_available(session, values['consumer_host'],
                                  reported_since, ())
        assignments, reason = plan(instance, held, donors,
                                   local_room(session,
                                              values['consumer_host']))
        grant = models.Grant(**dict(values, status='pending', reason=reason))
        grant.secret = secret  # stored wrapped (memagg.db.secret_box)
        grant.slabs = _slab_rows(assignments,
                                 range(sum(n for _, n in assignments)),
                                 values['slab_size_mb'],
                                 values['consumer_host'])
        grant.granted_mb = _lent_mb(grant)
        session.add(grant)
        session.flush()
    grant_notifications.grant_changed(context, grant, None)
    return grant


@facade.retry_on_race
def grant_move_slabs(context, grant_uuid, indexes, reported_since, exclude,
                     select, local_tier=False):
    """Give the slabs ``indexes`` of pending grant ``grant_uuid`` other
    donors: with the donors' rows locked (not the consumer, not those in
    ``exclude``), ``select(n_slabs, donors)`` returns ``[(host, n)]``; the
    indexes, in order, go to those hosts and the rest to the local tier
    with ``local_tier``, else they are deleted. Returns the grant."""
    with facade.writer().using(context) as session:
        grant = session.query(models.Grant).filter_by(
            uuid=grant_uuid).with_for_update().first()
        if grant is None:
            raise exceptions.NotFound(resource='Grant', id=grant_uuid)
        indexes = sorted(indexes)
        for slab in list(grant.slabs):
            if slab.index in indexes:
                grant.slabs.remove(slab)
        session.flush()
        donors = donors_available(session, grant.consumer_host,
                                  reported_since, exclude)
        assignments = select(len(indexes), donors) if donors else []
        left = len(indexes) - sum(n for _, n in assignments)
        if local_tier and left:
            assignments = list(assignments) + [(LOCAL_TIER, left)]
        grant.slabs.extend(_slab_rows(assignments, indexes,
                                      grant.slab_size_mb,
                                      grant.consumer_host))
        grant.granted_mb = _lent_mb(grant)
        session.flush()
        return grant


def _lent_mb(grant):
    """What ``grant``'s slabs hold on donors, MiB: its ``granted_mb``."""
    return sum(s.size_mb for s in grant.slabs if s.status in SLAB_HOLDING)


def _grant_for_update(session, uuid):
    grant = session.query(models.Grant).filter_by(
        uuid=uuid).with_for_update().first()
    if grant is None:
        raise exceptions.NotFound(resource='Grant', id=uuid)
    return grant


@facade.retry_on_race
def grant_prepared(context, grant_uuid, prepared, partial, reason):
    """Record what the donors of pending grant ``grant_uuid`` set up:
    ``prepared`` maps slab index -> ``(endpoint, remote_addr, rkey)``;
    slabs not in it are deleted, but for those in the local tier
    (reclaimed), and ``granted_mb`` is what remains. Returns the grant."""
    with facade.writer().using(context) as session:
        grant = _grant_for_update(session, grant_uuid)
        for slab in list(grant.slabs):
            if slab.status == 'reclaimed':
                continue
            if slab.index not in prepared:
                grant.slabs.remove(slab)
                continue
            slab.endpoint, slab.remote_addr, slab.rkey = prepared[slab.index]
        grant.granted_mb = _lent_mb(grant)
        grant.partial = partial
        grant.reason = reason
        session.flush()
        return grant


@facade.retry_on_race
def grant_set_status(context, grant_uuid, status, slab_status,
                     reason=None, expected=None, unfreed=()):
    """Move grant ``grant_uuid`` to ``status`` and its slabs that hold
    memory to ``slab_status`` — but those of the donors in ``unfreed``,
    which did not confirm they freed them, to ``releasing``. Slabs a
    reclaim took (reclaiming) are left to it. ``reason`` replaces the
    grant's when given. With ``expected`` (states), raise Conflict unless
    the grant is in one of them. Returns the grant."""
    with facade.writer().using(context) as session:
        grant = _grant_for_update(session, grant_uuid)
        if expected is not None and grant.status not in expected:
            raise exceptions.Conflict(reason='grant %s is %s, not %s' % (
                grant_uuid, grant.status, ' or '.join(expected)))
        previous, grant.status = grant.status, status
        if reason is not None:
            grant.reason = reason
        for slab in grant.slabs:
            if slab.status in SLAB_HOLDING and slab.status != 'reclaiming':
                slab.status = ('releasing' if slab.donor_host in unfreed
                               else slab_status)
        session.flush()
    grant_notifications.grant_changed(context, grant, previous)
    return grant


@facade.retry_on_race
def grant_begin_release(context, grant_uuid, consumer_host=None):
    """Move grant ``grant_uuid`` from active to releasing, in one
    transaction that locks its row and reads its VM's migration with a
    locking read: of concurrent callers one only wins, and a migration
    queued before cannot be missed (its look at the grants,
    memagg.db.tier_moves.slabs_of_migrating_instance, locks them first, so
    one queued after sees the grant releasing). Returns ``(won, grant)``:
    won False when the grant is not active, or with ``consumer_host`` one
    consumed by another host. Conflict while the VM migrates (its
    destination reads from the donors what its local copy lacks)."""
    with facade.writer().using(context) as session:
        grant = _grant_for_update(session, grant_uuid)
        if grant.status != 'active':
            return False, grant
        busy = db_migrations.migration_busy_locked(session,
                                                   grant.instance_uuid)
        if busy is not None:
            raise exceptions.Conflict(reason=(
                'instance %s of grant %s is in migration %s (%s); the grant '
                'can be released once it ends' % (
                    grant.instance_uuid, grant_uuid, busy.uuid,
                    busy.status)))
        if consumer_host is not None and consumer_host != grant.consumer_host:
            return False, grant
        grant.status = 'releasing'
        session.flush()
    grant_notifications.grant_changed(context, grant, 'active')
    return True, grant


@facade.retry_on_race
def grant_release_refused(context, grant_uuid, reason):
    """Put releasing grant ``grant_uuid`` back to active, its slabs as they
    are, with ``reason``: its consumer refused to take its pages back, so
    its donors keep them. Returns ``(won, grant)``; won False when the
    grant is not releasing."""
    with facade.writer().using(context) as session:
        grant = _grant_for_update(session, grant_uuid)
        if grant.status != 'releasing':
            return False, grant
        grant.status, grant.reason = 'active', reason
        session.flush()
    grant_notifications.grant_changed(context, grant, 'releasing')
    return True, grant


@facade.retry_on_race
def grant_compare_and_set(context, grant_uuid, expected, status):
    """Move grant ``grant_uuid`` from status ``expected`` to ``status``
    (facade.compare_and_set). Returns ``(won, grant)``, the grant as it is
    after the statement; NotFound when there is no such grant."""
    with facade.writer().using(context) as session:
        won, grant = facade.compare_and_set(
            session, models.Grant, 'Grant', ('uuid', grant_uuid), 'status',
            expected, status)
    if won:
        grant_notifications.grant_changed(context, grant, expected)
    return won, grant


@facade.retry_on_race
def grant_move(context, grant_uuid, source_host, dest_host):
    """Make ``dest_host`` the consumer of active grant ``grant_uuid``,
    whose VM moved there from ``source_host``; nothing changes when it is
    the consumer already. Conflict when the grant is not active or is
    consumed by a third host. Returns the grant."""
    with facade.writer().using(context) as session:
        grant = _grant_for_update(session, grant_uuid)
        if grant.status != 'active':
            raise exceptions.Conflict(reason='grant %s is %s, not active'
                                      % (grant_uuid, grant.status))
        if grant.consumer_host not in (source_host, dest_host):
            raise exceptions.Conflict(reason=(
                'grant %s is consumed by %s, neither %s nor %s' % (
                    grant_uuid, grant.consumer_host, source_host,
                    dest_host)))
        grant.consumer_host = dest_host
        session.flush()
        return grant


def grants_of_instance(context, instance_uuid, consumer_host):
    """The active grants of ``instance_uuid`` consumed on
    ``consumer_host``, oldest first."""
    with facade.reader().using(context) as session:
        return session.query(models.Grant).filter_by(
            instance_uuid=instance_uuid, consumer_host=consumer_host,
            status='active').order_by(models.Grant.created_at,
                                      models.Grant.id).all()


@facade.retry_on_race
def grant_delete(context, grant_uuid):
    """Delete grant ``grant_uuid`` and its slabs (one that granted
    nothing)."""
    with facade.writer().using(context) as session:
        session.delete(_grant_for_update(session, grant_uuid))


def grants_in_status(context, statuses):
    """The grants whose status is one of ``statuses``, oldest first."""
    with facade.reader().using(context) as session:
        return session.query(models.Grant).filter(
            models.Grant.status.in_(list(statuses))).order_by(
            models.Grant.created_at, models.Grant.id).all()


@facade.retry_on_race
def slabs_take_for_reclaim(context, donor_host, size_mb):
    """Take at least ``size_mb`` MiB of the active slabs ``donor_host``
    lends to active grants, whole slabs, from the VMs most over their L1
    allocation first: what a VM holds on donors (active slabs) less its
    share by its host's tier policy (instances' l1_share_mb; none known
    counts as 0), one slab at a time, so that each slab taken lowers its
    VM's excess (Double-Decker's victim); of one VM's, its newest grants'
    first, their highest indexes first, and so between VMs of equal
    excess; none of a VM that migrates. Each slab goes from active to
    reclaiming in a conditional UPDATE, so a slab a concurrent reclaim or
    release took is skipped and no slab is taken twice. Returns
    ``({grant uuid: [index, ...]}, MiB)`` of what this call took, indexes
    in order."""
    taken, total = {}, 0
    with facade.writer().using(context) as session:
        rows = session.query(models.Slab.id, models.Slab.index,
                             models.Slab.size_mb, models.Grant.id,
                             models.Grant.uuid,
                             models.Grant.instance_uuid).join(
            models.Grant).filter(
            models.Slab.donor_host == donor_host,
            models.Slab.status == 'active',
            models.Grant.status == 'active').order_by(
            models.Grant.created_at.desc(), models.Grant.id.desc(),
            models.Slab.index.desc()).all()
        queues = {}
        for order, row in enumerate(rows):
            queues.setdefault(row.instance_uuid, []).append((order, row))
        excess = _l1_excess(session, list(queues))
        locked = {}
        while total < size_mb and queues:
            vm = max(queues, key=lambda uuid: (excess[uuid],
                                               -queues[uuid][0][0]))
            _, (slab_id, index, slab_mb, grant_id, grant_uuid,
                _) = queues[vm].pop(0)
            if not queues[vm]:
                del queues[vm]
            if grant_id not in locked:
                # A shared lock on the grant's row: a release or a
                # migration's look at its slabs, which lock it, waits for
                # this transaction, and the status read is the committed
                # one, not the snapshot's. A migrating VM's slabs stay on
                # their donors: its destination reads them there.
                locked[grant_id] = session.query(models.Grant.status).filter(
                    models.Grant.id == grant_id).with_for_update(
                    read=True).scalar() == 'active' and (
                    db_migrations.migration_busy_locked(session, vm) is None)
            if not locked[grant_id]:
                continue
            if session.execute(sa.update(models.Slab).where(
                    models.Slab.id == slab_id,
                    models.Slab.status == 'active').values(
                    status='reclaiming').execution_options(
                    synchronize_session=False)).rowcount == 1:
                taken.setdefault(grant_uuid, []).append(index)
                total += slab_mb
                excess[vm] -= slab_mb
    return ({uuid: sorted(indexes) for uuid, indexes in taken.items()},
            total)


def _l1_excess(session, instance_uuids):
    """{instance uuid: MiB it holds on donors (its active grants' active
    slabs) over its L1 share (l1_share_mb, 0 when not known)}."""
    if not instance_uuids:
        return {}
    held = dict(session.query(
        models.Grant.instance_uuid, sa.func.sum(models.Slab.size_mb)).join(
        models.Slab).filter(
        models.Grant.instance_uuid.in_(instance_uuids),
        models.Grant.status == 'active',
        models.Slab.status == 'active').group_by(
        models.Grant.instance_uuid).all())
    shares = dict(session.query(
        models.Instance.uuid, models.Instance.l1_share_mb).filter(
        models.Instance.uuid.in_(instance_uuids)).all())
    return {uuid: int(held.get(uuid) or 0) - (shares.get(uuid) or 0)
            for uuid in instance_uuids}


@facade.retry_on_race
def grant_slabs_reclaimed(context, grant_uuid, indexes, status='reclaimed',
                          reason=None):
    """Move the reclaiming slabs ``indexes`` of grant ``grant_uuid`` to
    ``status`` (reclaimed, or releasing when the donor did not confirm it
    freed them) and take their memory off the grant's ``granted_mb``;
    ``reason`` replaces the grant's when given. Return the MiB taken."""
    with facade.writer().using(context) as session:
        grant = _grant_for_update(session, grant_uuid)
        if reason is not None:
            grant.reason = reason
        taken = 0
        for slab in grant.slabs:
            if slab.index in indexes and slab.status == 'reclaiming':
                slab.status = status
                taken += slab.size_mb
        grant.granted_mb -= taken
        return taken


@facade.retry_on_race
def grant_slabs_reclaim_failed(context, grant_uuid, indexes, reason=None):
    """Give the reclaiming slabs ``indexes`` of grant ``grant_uuid`` back
    to it (active again: its consumer did not give them up, or the reclaim
    could not be started) and record ``reason``, when given, as the
    grant's; return whether the grant is still active.
    When it is not (released meanwhile), the slabs stay reclaiming, for
    the caller to free."""
    with facade.writer().using(context) as session:
        grant = _grant_for_update(session, grant_uuid)
        if grant.status != 'active':
            return False
        for slab in grant.slabs:
            if slab.index in indexes and slab.status == 'reclaiming':
                slab.status = 'active'
        if reason is not None:
            grant.reason = reason
        return True


def slabs_reclaiming(context):
    """Slabs a reclaim took and has not finished: ``{(grant uuid, donor
    host): [index, ...]}``."""
    return slabs_in_status(context, 'reclaiming')


def slabs_releasing(context):
    """Slabs whose donor has not confirmed it freed them: ``{(grant uuid,
    donor host): [index, ...]}``."""
    return slabs_in_status(context, 'releasing')


def slabs_in_status(context, status):
    """Slabs in ``status``: ``{(grant uuid, donor host): [index, ...]}``."""
    with facade.reader().using(context) as session:
        rows = session.query(models.Grant.uuid, models.Slab.donor_host,
                             models.Slab.index).join(models.Grant).filter(
            models.Slab.status == status).order_by(
            models.Slab.index).all()
    result = {}
    for uuid, host, index in rows:
        result.setdefault((uuid, host), []).append(index)
    return result


@facade.retry_on_race
def slabs_released(context, grant_uuid, donor_host):
    """Mark the releasing slabs of ``grant_uuid`` on ``donor_host``
    released (the donor freed them)."""
    with facade.writer().using(context) as session:
        grant = _grant_for_update(session, grant_uuid)
        for slab in grant.slabs:
            if slab.donor_host == donor_host and slab.status == 'releasing':
                slab.status = 'released'


def _slab_mb_by(context, host_column, statuses):
    """MiB of active grants' slabs in ``statuses``, per ``host_column``."""
    with facade.reader().using(context) as session:
        return {host: int(total or 0) for host, total in session.query(
            host_column, sa.func.sum(models.Slab.size_mb))
            .join(models.Grant)
            .filter(models.Grant.status == 'active',
                    models.Slab.status.in_(statuses))
            .group_by(host_column).all()}


def lent_mb_by_donor(context):
    """Memory of active grants' slabs each donor still holds (not those
    reclaimed), in MiB, per donor host."""
    return _slab_mb_by(context, models.Slab.donor_host,
                       ('active', 'reclaiming'))


def remote_mb_by_consumer(context):
    """Memory active grants hold on donors (L1: their slabs active, or
    being reclaimed), in MiB, per consumer host; their slabs in the local
    tier are not remote memory."""
    return _slab_mb_by(context, models.Grant.consumer_host,
                       ('active', 'reclaiming'))


def local_tier_mb_by_consumer(context):
    """Memory of active grants' slabs in their consumer's local copy only
    (the slow tier: reclaimed, or being promoted back), in MiB, per
    consumer host."""
    return _slab_mb_by(context, models.Grant.consumer_host,
                       ('reclaimed', 'promoting'))


def reservoir_summary(context):
    """Memory the cluster can lend and has lent, in MiB, per host and total.

    ``lent_mb`` counts the slabs a host still holds for active grants (not
    those reclaimed), ``borrowed_mb`` the memory granted to a host's
    instances by active grants (on donors), ``local_tier_mb`` what their
    grants keep in its local copies only (the slow tier).
    """
    with facade.reader().using(context) as session:
        hosts = session.query(models.Host).order_by(models.Host.name).all()
        # Both join this transaction: enginefacade nests on one context.
        lent = lent_mb_by_donor(context)
        borrowed = remote_mb_by_consumer(context)
        local = local_tier_mb_by_consumer(context)
    per_host = [dict(host=h.name, free_reservoir_mb=h.free_reservoir_mb,
                     lendable_mb=h.lendable_mb,
                     lent_mb=int(lent.get(h.name) or 0),
                     borrowed_mb=int(borrowed.get(h.name) or 0),
                     local_tier_mb=int(local.get(h.name) or 0))
                for h in hosts]
    totals = {key: sum(h[key] for h in per_host)
              for key in ('free_reservoir_mb', 'lendable_mb', 'lent_mb',
                          'borrowed_mb', 'local_tier_mb')}
    return dict(totals, hosts=per_host)
