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

"""memagg's database API: every read and write of the DB goes through here.

Functions take a RequestContext first (enginefacade keeps the session on it)
and return model objects detached from the session, or raise
memagg.common.exceptions.
"""
import datetime

from oslo_db import api as oslo_db_api
from oslo_db import exception as db_exc
from oslo_db.sqlalchemy import enginefacade
from oslo_utils import timeutils
from oslo_utils import uuidutils
import sqlalchemy as sa

from memagg.common import exceptions
from memagg.conf import CONF
from memagg.db.sqlalchemy import models

_context_manager = enginefacade.transaction_context()
_configured = False
_SORT_DIRS = ('asc', 'desc')

# For every listable resource: its model, the column a marker names, the
# default sort, and the columns a request may filter and sort on.
LISTINGS = {
    'services': dict(model=models.Service, key='id',
                     sort=['host', 'binary'],
                     filters=('host', 'binary', 'disabled'),
                     sort_keys=('id', 'host', 'binary', 'last_seen_at',
                                'created_at')),
    'hosts': dict(model=models.Host, key='name', sort=['name'],
                  filters=('state',),
                  sort_keys=('name', 'memory_mb', 'free_reservoir_mb',
                             'lendable_mb', 'cpu_util', 'reported_at',
                             'created_at')),
    'instances': dict(model=models.Instance, key='uuid', sort=['created_at'],
                      filters=('host', 'project_id', 'status'),
                      sort_keys=('uuid', 'name', 'host', 'booked_mb',
                                 'current_mb', 'wss_mb', 'wss_maxavg_mb',
                                 'created_at', 'updated_at')),
    'wss_samples': dict(model=models.WssSample, key='id',
                        sort=['sampled_at'], filters=('instance_uuid',),
                        sort_keys=('sampled_at',)),
    'grants': dict(model=models.Grant, key='uuid', sort=['created_at'],
                   filters=('instance_uuid', 'consumer_host', 'status'),
                   sort_keys=('created_at', 'granted_mb', 'requested_mb')),
    'audits': dict(model=models.Audit, key='uuid', sort=['created_at'],
                   filters=('state',),
                   sort_keys=('created_at', 'finished_at')),
    'migrations': dict(model=models.Migration, key='uuid',
                       sort=['created_at'],
                       filters=('instance_uuid', 'source_host', 'dest_host',
                                'status'),
                       sort_keys=('created_at', 'updated_at',
                                  'duration_s')),
}


def configure():
    """Point the engine facade at [database]; call once per process."""
    global _configured
    if not _configured:
        _context_manager.configure(**dict(CONF.database.items()))
        _configured = True


def get_engine():
    """The writer engine (migrations, tests)."""
    configure()
    return _context_manager.writer.get_engine()


def dispose():
    """Close the engine's connections and drop the engine facade, so the
    next call builds a new one on the [database] options then in force."""
    global _context_manager, _configured
    if _configured:
        _context_manager.dispose_pool()
    _context_manager = enginefacade.transaction_context()
    _configured = False


def _reader():
    configure()
    return _context_manager.reader


def _writer():
    configure()
    return _context_manager.writer


def _sort_params(resource, spec, sort_keys, sort_dirs):
    """Validated sort keys and directions, ending with the unique ``id``."""
    keys = list(sort_keys or spec['sort'])
    dirs = list(sort_dirs or [])
    for key in keys:
        if key not in spec['sort_keys'] and key != 'id':
            raise exceptions.InvalidParameter(
                field='sort_key', reason='%s cannot be sorted by %s; use one '
                'of %s' % (resource, key, ', '.join(spec['sort_keys'])))
    for direction in dirs:
        if direction not in _SORT_DIRS:
            raise exceptions.InvalidParameter(
                field='sort_dir', reason='%r is not a direction; use asc or '
                'desc' % direction)
    if len(dirs) > len(keys):
        raise exceptions.InvalidParameter(
            field='sort_dir', reason='%d directions for %d sort keys; give at '
            'most one direction per key' % (len(dirs), len(keys)))
    # Keys given no direction take the last one given (asc if none).
    dirs += [dirs[-1] if dirs else 'asc'] * (len(keys) - len(dirs))
    # A stable order, and so a marker that means one place, needs a unique
    # last key.
    if 'id' not in keys:
        keys.append('id')
        dirs.append(dirs[-1])
    return keys, dirs


def _paginate(query, model, keys, dirs, marker_row, limit):
    """Order ``query`` by ``keys`` and keep the rows after ``marker_row``.

    NULL sorts before every value in ascending order and after every value in
    descending order on every backend (PostgreSQL's own default is the
    opposite). oslo.db's paginate_query is not used because it skips a key
    whose marker value is NULL and so loses rows after such a marker.
    """
    columns = [getattr(model, key) for key in keys]
    for column, direction in zip(columns, dirs):
        order = column.asc() if direction == 'asc' else column.desc()
        if column.nullable:
            not_null = column.is_not(None)
            query = query.order_by(
                not_null.asc() if direction == 'asc' else not_null.desc())
        # Only the column itself: an index on it can then serve the order.
        query = query.order_by(order)
    if marker_row is not None:
        values = [getattr(marker_row, key) for key in keys]
        after = []
        for i, (column, direction) in enumerate(zip(columns, dirs)):
            value = values[i]
            if value is None:
                if direction == 'desc':
                    # Nothing sorts after NULL on a descending key.
                    continue
                beyond = column.is_not(None)
            elif direction == 'asc':
                beyond = column > value
            else:
                beyond = sa.or_(column < value, column.is_(None))
            same = [c.is_(None) if v is None else c == v
                    for c, v in zip(columns[:i], values[:i])]
            after.append(sa.and_(*same, beyond))
        query = query.filter(sa.or_(*after) if after else sa.false())
    if limit is not None:
        query = query.limit(limit)
    return query


def _marker_row(session, model, key, marker):
    column = getattr(model, key)
    if isinstance(column.type, sa.Integer):
        # A non-numeric marker for an integer key names no row; comparing it
        # would be a type error on PostgreSQL.
        try:
            marker = int(marker)
        except (TypeError, ValueError):
            raise exceptions.MarkerNotFound(marker)
    row = session.query(model).filter(column == marker).first()
    if row is None:
        raise exceptions.MarkerNotFound(marker)
    return row


def list_resources(context, resource, filters=None, limit=None, marker=None,
                   sort_keys=None, sort_dirs=None, since=None, until=None):
    """Return one page of a resource's rows.

    ``resource`` is a key of LISTINGS. ``filters`` maps column to value;
    ``marker`` is the key of the last row of the previous page; ``since`` and
    ``until`` bound created_at (sampled_at for WSS samples), both included.
    ``sort_keys`` are columns of the listing's ``sort_keys``; ``sort_dirs``
    are ``asc`` or ``desc``, one per key at most (missing ones repeat the
    last). Raises InvalidParameter naming the bad argument, MarkerNotFound.
    """
    if resource not in LISTINGS:
        raise exceptions.InvalidParameter(
            field='resource', reason='%s is not listable; use one of %s'
            % (resource, ', '.join(sorted(LISTINGS))))
    spec = LISTINGS[resource]
    model = spec['model']
    for column in filters or {}:
        if column not in spec['filters']:
            raise exceptions.InvalidParameter(
                field=column, reason='not a filter of %s; use one of %s'
                % (resource, ', '.join(spec['filters'])))
    if limit is not None and limit < 0:
        raise exceptions.InvalidParameter(
            field='limit', reason='%s is negative; give 0 or more' % limit)
    keys, dirs = _sort_params(resource, spec, sort_keys, sort_dirs)
    with _reader().using(context) as session:
        query = session.query(model)
        for column, value in (filters or {}).items():
            query = query.filter(getattr(model, column) == value)
        time_column = (model.sampled_at if resource == 'wss_samples'
                       else model.created_at)
        if since is not None:
            query = query.filter(time_column >= since)
        if until is not None:
            query = query.filter(time_column <= until)
        marker_row = None
        if marker is not None:
            marker_row = _marker_row(session, model, spec['key'], marker)
        return _paginate(query, model, keys, dirs, marker_row, limit).all()


def _get(context, model, column, value, resource):
    with _reader().using(context) as session:
        row = session.query(model).filter(
            getattr(model, column) == value).first()
        if row is None:
            raise exceptions.NotFound(resource=resource, id=value)
        return row


def host_get(context, name):
    return _get(context, models.Host, 'name', name, 'Host')


def instance_get(context, uuid):
    return _get(context, models.Instance, 'uuid', uuid, 'Instance')


def grant_get(context, uuid):
    return _get(context, models.Grant, 'uuid', uuid, 'Grant')


def audit_get(context, uuid):
    return _get(context, models.Audit, 'uuid', uuid, 'Audit')


def migration_get(context, uuid):
    return _get(context, models.Migration, 'uuid', uuid, 'Migration')


def _lost_race(error):
    """Whether a write failed only because a concurrent one went first."""
    if isinstance(error, db_exc.DBDuplicateEntry):
        return True
    # SQLite (all-in-one mode) fails at once, rather than wait, when two
    # transactions that both read want to write; the loser can start again.
    error = getattr(error, 'inner_exception', None) or error
    return (isinstance(error, sa.exc.OperationalError)
            and 'database is locked' in str(error))


def _retry_on_race(func):
    """Run ``func``'s transaction again when it lost a race with a
    concurrent writer or the backend broke a deadlock."""
    return oslo_db_api.wrap_db_retry(
        max_retries=5, retry_interval=0.05, retry_on_deadlock=True,
        exception_checker=_lost_race)(func)


@_retry_on_race
def service_heartbeat(context, host, binary, topic):
    """Create or refresh a service's row; return it."""
    now = timeutils.utcnow()
    with _writer().using(context) as session:
        # Locked so that concurrent heartbeats of one service all count.
        row = session.query(models.Service).filter_by(
            host=host, binary=binary).with_for_update().first()
        if row is None:
            row = models.Service(host=host, binary=binary, topic=topic,
                                 report_count=0)
            session.add(row)
        row.topic = topic
        row.report_count += 1
        row.last_seen_at = now
        return row


def service_is_up(service):
    """Whether a service row's last heartbeat is recent enough."""
    if service.last_seen_at is None:
        return False
    age = timeutils.utcnow() - service.last_seen_at
    return age.total_seconds() <= CONF.service_down_time


# Executing a plan (memagg.scheduler.migration): every step's state is
# written here before the next step, so a restarted scheduler resumes it.

def _locked(session, model, resource, row_id):
    """Row ``row_id`` of ``model``, locked until the transaction ends;
    NotFound naming ``resource`` when it is gone."""
    row = session.query(model).filter_by(id=row_id).with_for_update().first()
    if row is None:
        raise exceptions.NotFound(resource=resource, id=row_id)
    return row


def _action_for_update(session, action_id):
    return _locked(session, models.AuditAction, 'Audit action', action_id)


def _note_on_audit(session, action, note):
    """Append ``note`` (an action's outcome) to its audit's reason."""
    if note:
        # Locked: the notes of actions ending at once must all be kept.
        audit = session.query(models.Audit).filter_by(
            id=action.audit_id).with_for_update().one()
        audit.reason = '\n'.join(filter(None, [audit.reason, note]))


@_retry_on_race
def audit_action_set_state(context, action_id, state, note=None):
    """Move audit action ``action_id`` to ``state``; ``note`` (why it
    failed or was skipped) is appended to its audit's reason in the same
    transaction. Returns the action."""
    with _writer().using(context) as session:
        row = _action_for_update(session, action_id)
        row.state = state
        _note_on_audit(session, row, note)
        return row


def migrations_of_audit(context, audit_uuid):
    """The migrations of audit ``audit_uuid``'s actions: a dict action id
    -> Migration."""
    with _reader().using(context) as session:
        rows = session.query(models.Migration).join(
            models.AuditAction,
            models.Migration.audit_action_id == models.AuditAction.id).join(
            models.Audit).filter(models.Audit.uuid == audit_uuid).all()
        return {row.audit_action_id: row for row in rows}


def _queued_migration(session, action):
    """The migration of migrate ``action`` (locked by the caller), created
    ``queued`` from the action's VM and hosts when it has none yet."""
    row = session.query(models.Migration).filter_by(
        audit_action_id=action.id).first()
    if row is None:
        row = models.Migration(
            uuid=uuidutils.generate_uuid(), status='queued',
            instance_uuid=action.instance_uuid,
            source_host=action.source_host, dest_host=action.dest_host,
            audit_action_id=action.id, attempts=0)
        session.add(row)
        session.flush()
    return row


@_retry_on_race
def migration_queue(context, action_id):
    """The migration of migrate action ``action_id``, created ``queued``
    (from the action's VM and hosts) when it has none yet."""
    with _writer().using(context) as session:
        return _queued_migration(session,
                                 _action_for_update(session, action_id))


#: migrations.status of a migration not yet ended.
MIGRATION_BUSY = ('queued', 'running')


@_retry_on_race
def migration_request(context, instance_uuid, source_host, dest_host,
                      reason):
    """Queue the live migration of ``instance_uuid`` from ``source_host``
    to ``dest_host`` asked for by an operator, in one transaction: a
    ``recommended`` audit whose plan is that one migrate action (its
    reason ``reason``) and the action's ``queued`` migration. The
    instance's row is locked, so that two requests at once cannot both
    queue one. Raises NotFound when the instance is gone from the DB and
    Conflict when it has a migration queued or running already. Returns
    the audit's UUID and the migration."""
    with _writer().using(context) as session:
        instance = session.query(models.Instance).filter_by(
            uuid=instance_uuid).with_for_update().first()
        if instance is None:
            raise exceptions.NotFound(resource='Instance', id=instance_uuid)
        busy = session.query(models.Migration).filter(
            models.Migration.instance_uuid == instance_uuid,
            models.Migration.status.in_(MIGRATION_BUSY)).first()
        if busy is not None:
            raise exceptions.Conflict(reason=(
                'instance %s already has migration %s %s; wait until it '
                'ends' % (instance_uuid, busy.uuid, busy.status)))
        action = models.AuditAction(
            sequence=0, action_type='migrate', instance_uuid=instance_uuid,
            source_host=source_host, dest_host=dest_host, reason=reason)
        audit = models.Audit(
            uuid=uuidutils.generate_uuid(), state='recommended',
            reason='migration of %s from %s to %s requested through the '
                   'API' % (instance_uuid, source_host, dest_host),
            actions=[action])
        session.add(audit)
        session.flush()
        return audit.uuid, _queued_migration(session, action)


def _migration_for_update(session, migration_id):
    return _locked(session, models.Migration, 'Migration', migration_id)


@_retry_on_race
def migration_start_attempt(context, migration_id):
    """Count one more attempt of migration ``migration_id`` and mark it and
    its action running, before the compute service is asked. The row is
    not written again until the attempt ends, so its ``updated_at`` tells
    when the attempt started. Returns the migration."""
    with _writer().using(context) as session:
        row = _migration_for_update(session, migration_id)
        row.status = 'running'
        row.attempts += 1
        if row.audit_action_id is not None:
            _action_for_update(session, row.audit_action_id).state = (
                'running')
        return row


@_retry_on_race
def migration_attempt_failed(context, migration_id, error,
                             bytes_transferred=None):
    """Record why an attempt of migration ``migration_id`` failed (it stays
    running: another attempt follows). Returns the migration."""
    with _writer().using(context) as session:
        row = _migration_for_update(session, migration_id)
        row.error = error
        if bytes_transferred is not None:
            row.bytes_transferred = bytes_transferred
        return row


@_retry_on_race
def migration_finish(context, migration_id, status, duration_s=None,
                     error=None, bytes_transferred=None, note=None):
    """End migration ``migration_id`` as ``status`` (succeeded or failed)
    and its action likewise; ``duration_s``, ``error`` and
    ``bytes_transferred`` are stored when given, and ``note`` is appended
    to the audit's reason. Returns the migration."""
    with _writer().using(context) as session:
        row = _migration_for_update(session, migration_id)
        row.status = status
        for column, value in (('duration_s', duration_s), ('error', error),
                              ('bytes_transferred', bytes_transferred)):
            if value is not None:
                setattr(row, column, value)
        if row.audit_action_id is not None:
            action = _action_for_update(session, row.audit_action_id)
            action.state = status
            _note_on_audit(session, action, note)
        return row


#: Columns of a migration its executor records besides its status.
MIGRATION_COSTS = ('bytes_transferred', 'downtime_ms', 'remote_share',
                   'remote_mb', 'local_copy_left_mb')


@_retry_on_race
def migration_record(context, migration_id, **costs):
    """Store what migration ``migration_id`` cost or left to do (columns
    of MIGRATION_COSTS; None values are skipped). Returns the
    migration."""
    unknown = sorted(set(costs) - set(MIGRATION_COSTS))
    if unknown:
        raise exceptions.InvalidParameter(
            field=', '.join(unknown), reason='not a cost of a migration')
    with _writer().using(context) as session:
        row = _migration_for_update(session, migration_id)
        for column, value in costs.items():
            if value is not None:
                setattr(row, column, value)
        return row


def migrations_copying(context):
    """Succeeded migrations whose destination still rebuilds a durability
    copy (local_copy_left_mb > 0), oldest first."""
    with _reader().using(context) as session:
        return session.query(models.Migration).filter(
            models.Migration.status == 'succeeded',
            models.Migration.local_copy_left_mb > 0).order_by(
            models.Migration.id).all()


def migrations_since(context, since):
    """The migrations queued at ``since`` or later, in any status, oldest
    first: what consolidation rounds know of recent moves."""
    with _reader().using(context) as session:
        return session.query(models.Migration).filter(
            models.Migration.created_at >= since).order_by(
            models.Migration.created_at, models.Migration.id).all()


def migration_running_for(context, instance_uuid):
    """The migration of ``instance_uuid`` queued or running, or None."""
    with _reader().using(context) as session:
        return session.query(models.Migration).filter(
            models.Migration.instance_uuid == instance_uuid,
            models.Migration.status.in_(MIGRATION_BUSY)).first()


@_retry_on_race
def host_set_state(context, name, state):
    """Set host ``name``'s state (active, or standby when a plan has
    disabled its compute service); NotFound when memagg has no such
    host."""
    with _writer().using(context) as session:
        row = session.query(models.Host).filter_by(
            name=name).with_for_update().first()
        if row is None:
            raise exceptions.NotFound(resource='Host', id=name)
        row.state = state
        return row


def _check_columns(model, values, field):
    unknown = sorted(set(values) - set(model.__table__.columns.keys()))
    if unknown:
        raise exceptions.InvalidParameter(
            field=field, reason='unknown column(s) %s of %s'
            % (', '.join(unknown), model.__tablename__))


@_retry_on_race
def report_ingest(context, host, instances, samples, reported_at=None,
                  host_sample=None):
    """Store one compute node's report in one transaction.

    ``host`` is a dict of Host columns (``name`` required); ``instances`` a
    list of dicts of Instance columns (``uuid`` required) now on that host;
    ``samples`` a list of dicts of WssSample columns; ``host_sample`` a dict
    of HostSample columns (``cpu_util``, ``mem_used_mb``; ``sampled_at``
    defaults to ``reported_at``), or None. Instances the host reported
    before but not now are marked ``gone``.
    """
    _check_columns(models.Host, host, 'host')
    for values in instances:
        _check_columns(models.Instance, values, 'instances')
    for sample in samples:
        _check_columns(models.WssSample, sample, 'samples')
    if host_sample is not None:
        _check_columns(models.HostSample, host_sample, 'host_sample')
    reported_at = reported_at or timeutils.utcnow()
    with _writer().using(context) as session:
        row = session.query(models.Host).filter_by(name=host['name']).first()
        if row is None:
            row = models.Host(name=host['name'])
            session.add(row)
        for key, value in host.items():
            setattr(row, key, value)
        row.reported_at = reported_at

        existing = {i.uuid: i for i in session.query(models.Instance).filter(
            sa.or_(models.Instance.host == host['name'],
                   models.Instance.uuid.in_([i['uuid'] for i in instances])))}
        seen = set()
        for values in instances:
            inst = existing.get(values['uuid'])
            if inst is None:
                inst = models.Instance(uuid=values['uuid'])
                session.add(inst)
            for key, value in values.items():
                setattr(inst, key, value)
            inst.host = host['name']
            inst.status = values.get('status', 'active')
            seen.add(values['uuid'])
        for uuid, inst in existing.items():
            if uuid not in seen and inst.host == host['name']:
                inst.status = 'gone'
        if samples:
            session.execute(sa.insert(models.WssSample), [
                dict(sample, host=host['name']) for sample in samples])
        if host_sample is not None:
            session.add(models.HostSample(**dict(
                {'sampled_at': reported_at}, **host_sample,
                host=host['name'])))
    return row


def reservoir_summary(context):
    """Memory the cluster can lend and has lent, in MiB, per host and total.

    ``lent_mb`` counts the slabs a host still holds for active grants (not
    those reclaimed), ``borrowed_mb`` the memory granted to a host's
    instances by active grants.
    """
    with _reader().using(context) as session:
        hosts = session.query(models.Host).order_by(models.Host.name).all()
        lent = dict(session.query(models.Slab.donor_host,
                                  sa.func.sum(models.Slab.size_mb))
                    .join(models.Grant)
                    .filter(models.Grant.status == 'active',
                            models.Slab.status == 'active')
                    .group_by(models.Slab.donor_host).all())
        borrowed = dict(session.query(models.Grant.consumer_host,
                                      sa.func.sum(models.Grant.granted_mb))
                        .filter(models.Grant.status == 'active')
                        .group_by(models.Grant.consumer_host).all())
    per_host = [dict(host=h.name, free_reservoir_mb=h.free_reservoir_mb,
                     lendable_mb=h.lendable_mb,
                     lent_mb=int(lent.get(h.name) or 0),
                     borrowed_mb=int(borrowed.get(h.name) or 0))
                for h in hosts]
    totals = {key: sum(h[key] for h in per_host)
              for key in ('free_reservoir_mb', 'lendable_mb', 'lent_mb',
                          'borrowed_mb')}
    return dict(totals, hosts=per_host)


def purge_wss_samples(context, older_than_hours=None):
    """Delete WSS samples and host samples older than ``older_than_hours``
    (default: [wss] sample_retention_hours); return how many."""
    hours = (CONF.wss.sample_retention_hours if older_than_hours is None
             else older_than_hours)
    if hours < 0:
        raise exceptions.InvalidParameter(
            field='older_than_hours', reason='%s is negative; give 0 or more'
            % hours)
    cutoff = timeutils.utcnow() - datetime.timedelta(hours=hours)
    with _writer().using(context) as session:
        count = 0
        for model in (models.WssSample, models.HostSample):
            count += session.execute(sa.delete(model).where(
                model.sampled_at < cutoff)).rowcount
        return count


#: The states of an audit still being worked on; any other state is an
#: end, so a new final state is purged without a change here.
AUDIT_ACTIVE_STATES = ('pending', 'planning', 'executing')

# Audits deleted per statement: bounded IN lists.
_PURGE_BATCH = 500


def purge_audits(context, older_than_hours=None):
    """Delete the audits that have ended (their state is not one of
    AUDIT_ACTIVE_STATES) and were last updated (or, never updated,
    created) more than ``older_than_hours`` ago (default: [consolidation]
    audit_retention_hours), with their actions and those actions'
    migrations; return how many audits.

    A ``recommended`` audit counts as ended: nobody executed its plan
    within the retention, and a plan made from samples that old no longer
    fits the cloud, so executing it later would be a mistake. Negative
    ``older_than_hours`` raises InvalidParameter naming it.
    """
    hours = (CONF.consolidation.audit_retention_hours
             if older_than_hours is None else older_than_hours)
    if hours < 0:
        raise exceptions.InvalidParameter(
            field='older_than_hours', reason='%s is negative; give 0 or more'
            % hours)
    cutoff = timeutils.utcnow() - datetime.timedelta(hours=hours)
    audit = models.Audit
    with _writer().using(context) as session:
        # Locked: an audit executed meanwhile is not left without actions.
        ids = session.scalars(sa.select(audit.id).where(
            audit.state.not_in(AUDIT_ACTIVE_STATES),
            sa.func.coalesce(audit.updated_at, audit.created_at) < cutoff)
            .with_for_update()).all()
        for start in range(0, len(ids), _PURGE_BATCH):
            batch = ids[start:start + _PURGE_BATCH]
            actions = sa.select(models.AuditAction.id).where(
                models.AuditAction.audit_id.in_(batch))
            # Explicit deletes: the foreign keys would only null the
            # migrations, and SQLite does not enforce them.
            session.execute(sa.delete(models.Migration).where(
                models.Migration.audit_action_id.in_(actions)))
            session.execute(sa.delete(models.AuditAction).where(
                models.AuditAction.audit_id.in_(batch)))
            session.execute(sa.delete(audit).where(audit.id.in_(batch)))
        return len(ids)


def hosts_for_round(context, reported_since):
    """The hosts a consolidation round considers: those that reported at or
    after ``reported_since``, and standby hosts (powered off by a plan, so
    silent) whatever their last report. Ordered by name."""
    with _reader().using(context) as session:
        return session.query(models.Host).filter(sa.or_(
            models.Host.reported_at >= reported_since,
            models.Host.state == 'standby')).order_by(models.Host.name).all()


def instances_on_hosts(context, hosts):
    """The instances ``hosts`` (names) last reported and still run (not
    ``gone``), ordered by host and uuid."""
    with _reader().using(context) as session:
        return session.query(models.Instance).filter(
            models.Instance.host.in_(list(hosts)),
            models.Instance.status != 'gone').order_by(
            models.Instance.host, models.Instance.uuid).all()


def _latest(session, columns, key, order, where, count):
    """Rows of ``columns`` with the ``count`` greatest ``order`` values per
    ``key`` value, oldest first within each key."""
    rank = sa.func.row_number().over(
        partition_by=key, order_by=(order.desc(), columns[0].desc()))
    ranked = sa.select(*columns, key.label('key'), order.label('at'),
                       rank.label('rank')).where(*where).subquery()
    return session.execute(
        sa.select(ranked).where(ranked.c.rank <= count).order_by(
            ranked.c.key, ranked.c.at, ranked.c.id)).all()


def host_samples_latest(context, hosts, count):
    """The last ``count`` host samples of each of ``hosts`` (names): a dict
    host -> list of (cpu_util, mem_used_mb), oldest first."""
    hosts = list(hosts)
    result = {host: [] for host in hosts}
    if not hosts or count < 1:
        return result
    model = models.HostSample
    with _reader().using(context) as session:
        for row in _latest(session, [model.id, model.cpu_util,
                                     model.mem_used_mb],
                           model.host, model.sampled_at,
                           [model.host.in_(hosts)], count):
            result[row.key].append((row.cpu_util, row.mem_used_mb))
    return result


def instance_cpu_latest(context, uuids, count):
    """The last ``count`` CPU samples (cores) of each of ``uuids``: a dict
    uuid -> list of floats, oldest first; samples without CPU are
    skipped."""
    uuids = list(uuids)
    result = {uuid: [] for uuid in uuids}
    if not uuids or count < 1:
        return result
    model = models.WssSample
    with _reader().using(context) as session:
        for row in _latest(session, [model.id, model.cpu_util],
                           model.instance_uuid, model.sampled_at,
                           [model.instance_uuid.in_(uuids),
                            model.cpu_util.is_not(None)], count):
            result[row.key].append(row.cpu_util)
    return result


def granted_mb_by_consumer(context):
    """Memory granted by active grants, in MiB, per consumer host."""
    with _reader().using(context) as session:
        return {host: int(total or 0) for host, total in session.query(
            models.Grant.consumer_host, sa.func.sum(models.Grant.granted_mb))
            .filter(models.Grant.status == 'active')
            .group_by(models.Grant.consumer_host).all()}


def host_usages(context):
    """Every host's memory and what uses it, read in one transaction with
    one query per table (GET /v1/host_usages, for Nova's scheduler).

    Returns ``(hosts, instances, granted, held)``: the hosts by name; the
    instances still running (not ``gone``) as rows of ``host``,
    ``booked_mb``, ``wss_maxavg_mb``, ``wss_mb`` and ``current_mb``; MiB
    granted by active grants per consumer host; MiB of the slabs each donor
    holds (pending, active or releasing), per donor host.
    """
    inst = models.Instance
    with _reader().using(context) as session:
        hosts = session.query(models.Host).order_by(models.Host.name).all()
        instances = session.query(
            inst.host, inst.booked_mb, inst.wss_maxavg_mb, inst.wss_mb,
            inst.current_mb).filter(inst.status != 'gone').all()
        # Joins this transaction: enginefacade nests on one context.
        granted = granted_mb_by_consumer(context)
        held = {host: int(total or 0) for host, total in session.query(
            models.Slab.donor_host, sa.func.sum(models.Slab.size_mb))
            .filter(models.Slab.status.in_(SLAB_HOLDING))
            .group_by(models.Slab.donor_host)}
    return hosts, instances, granted, held


AUDIT_FINAL_STATES = ('succeeded', 'partial', 'failed')


def audit_create(context, values):
    """Create an audit from ``values`` (Audit columns; ``uuid`` generated
    when absent, ``state`` pending by default); return it."""
    _check_columns(models.Audit, values, 'audit')
    values = dict(values)
    values.setdefault('uuid', uuidutils.generate_uuid())
    values.setdefault('state', 'pending')
    with _writer().using(context) as session:
        row = models.Audit(**values)
        session.add(row)
        session.flush()
        return row


def _audit_for_update(session, uuid, expected):
    row = session.query(models.Audit).filter_by(
        uuid=uuid).with_for_update().first()
    if row is None:
        raise exceptions.NotFound(resource='Audit', id=uuid)
    if expected is not None and row.state not in expected:
        raise exceptions.Conflict(reason='audit %s is %s, not %s' % (
            uuid, row.state, ' or '.join(expected)))
    return row


def _set_audit_state(row, state, reason):
    row.state = state
    if reason is not None:
        row.reason = reason
    if state in AUDIT_FINAL_STATES:
        row.finished_at = timeutils.utcnow()


@_retry_on_race
def audit_set_state(context, uuid, state, reason=None, expected=None):
    """Move audit ``uuid`` to ``state`` (with ``reason`` when given);
    ``finished_at`` is set on succeeded, partial and failed. With
    ``expected`` (a tuple of states), raise Conflict unless the audit is in
    one of them. Returns the audit."""
    with _writer().using(context) as session:
        row = _audit_for_update(session, uuid, expected)
        _set_audit_state(row, state, reason)
        return row


@_retry_on_race
def audit_store_plan(context, uuid, actions, unplaced=None,
                     state='recommended', reason=None, expected=None):
    """Store a plan on audit ``uuid`` in one transaction: ``actions`` (dicts
    of AuditAction columns, in execution order; their sequence is their
    position, any earlier actions are replaced), ``unplaced`` (what the plan
    left out and why) and the audit's new ``state`` and ``reason``. With
    ``expected``, raise Conflict unless the audit is in one of those
    states. Returns the audit with its actions."""
    for values in actions:
        _check_columns(models.AuditAction, values, 'actions')
    with _writer().using(context) as session:
        row = _audit_for_update(session, uuid, expected)
        row.actions = []
        session.flush()
        row.actions = [models.AuditAction(**dict(values, sequence=i))
                       for i, values in enumerate(actions)]
        row.unplaced = unplaced
        _set_audit_state(row, state, reason)
        session.flush()
        return row


def audits_in_state(context, states):
    """The audits whose state is one of ``states``, oldest first."""
    with _reader().using(context) as session:
        return session.query(models.Audit).filter(
            models.Audit.state.in_(list(states))).order_by(
            models.Audit.created_at, models.Audit.id).all()


def describe_error(error):
    """One line for an operator about a failed database call: which
    database (password hidden), the driver's reason, and where to fix it."""
    # The driver's message can go on with the SQL and its parameters; its
    # first line names the cause.
    reason = (str(error).strip().splitlines() or [type(error).__name__])[0]
    try:
        url = sa.engine.make_url(CONF.database.connection).render_as_string(
            hide_password=True)
    except sa.exc.ArgumentError:
        url = '(unparsable URL)'
    return ('database %s failed: %s; check [database] connection and that '
            'the server is running' % (url, reason))


# The global memory reservoir (memagg.scheduler.reservoir). A grant is
# reserved, with its slabs on their donors, in one transaction that locks
# the instance and the donor hosts' rows, so that two allocations at once
# can neither exceed a VM's cap nor lend a donor's memory twice.

#: Slab states that hold memory on the donor.
SLAB_HOLDING = ('pending', 'active', 'releasing')
#: Grant states whose memory counts against the VM's cap.
GRANT_HOLDING = ('pending', 'active')


def _donors_available(session, consumer_host, reported_since, exclude):
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


def _slab_rows(assignments, indexes, size_mb):
    """Slab rows for ``assignments`` [(donor, n)], numbered by
    ``indexes`` in order."""
    indexes = iter(indexes)
    return [models.Slab(index=next(indexes), donor_host=host,
                        size_mb=size_mb, status='pending')
            for host, count in assignments for _ in range(count)]


@_retry_on_race
def grant_reserve(context, values, reported_since, plan):
    """Reserve a new grant, pending, and its slabs on their donors.

    ``values`` are Grant columns (``uuid``, ``instance_uuid``,
    ``consumer_host``, ``requested_mb``, ``slab_size_mb``, ``secret``).
    With the instance's and the donors' rows locked, ``plan(instance,
    held_mb, donors)`` is called — ``held_mb`` is what the instance's
    pending and active grants hold, ``donors`` ``[(host, available_mb)]``
    as in :func:`_donors_available` — and returns ``(assignments, reason)``:
    ``[(host, n_slabs)]`` and why it is less than requested (or None); it
    raises to store nothing. May run again when a concurrent writer wins.
    Returns the grant with its slabs (indexes from 0 in assignment order);
    NotFound when the instance is unknown.
    """
    _check_columns(models.Grant, values, 'grant')
    with _writer().using(context) as session:
        instance = session.query(models.Instance).filter_by(
            uuid=values['instance_uuid']).with_for_update().first()
        if instance is None:
            raise exceptions.NotFound(resource='Instance',
                                      id=values['instance_uuid'])
        held = sum(size for size, in session.query(
            models.Grant.granted_mb).filter(
            models.Grant.instance_uuid == instance.uuid,
            models.Grant.status.in_(GRANT_HOLDING)).with_for_update(
            read=True))
        donors = _donors_available(session, values['consumer_host'],
                                   reported_since, ())
        assignments, reason = plan(instance, held, donors)
        count = sum(n for _, n in assignments)
        grant = models.Grant(**dict(values, status='pending',
                                    granted_mb=count * values[
                                        'slab_size_mb'],
                                    reason=reason))
        grant.slabs = _slab_rows(assignments, range(count),
                                 values['slab_size_mb'])
        session.add(grant)
        session.flush()
        return grant


@_retry_on_race
def grant_move_slabs(context, grant_uuid, indexes, reported_since, exclude,
                     select):
    """Give the slabs ``indexes`` of pending grant ``grant_uuid`` other
    donors: with the donors' rows locked (not the consumer, not those in
    ``exclude``), ``select(n_slabs, donors)`` returns ``[(host, n)]``; the
    indexes, in order, go to those hosts and the rest are deleted. Returns
    the grant."""
    with _writer().using(context) as session:
        grant = session.query(models.Grant).filter_by(
            uuid=grant_uuid).with_for_update().first()
        if grant is None:
            raise exceptions.NotFound(resource='Grant', id=grant_uuid)
        indexes = sorted(indexes)
        for slab in list(grant.slabs):
            if slab.index in indexes:
                grant.slabs.remove(slab)
        session.flush()
        donors = _donors_available(session, grant.consumer_host,
                                   reported_since, exclude)
        assignments = select(len(indexes), donors) if donors else []
        grant.slabs.extend(_slab_rows(assignments, indexes,
                                      grant.slab_size_mb))
        grant.granted_mb = sum(s.size_mb for s in grant.slabs)
        session.flush()
        return grant


def _grant_for_update(session, uuid):
    grant = session.query(models.Grant).filter_by(
        uuid=uuid).with_for_update().first()
    if grant is None:
        raise exceptions.NotFound(resource='Grant', id=uuid)
    return grant


@_retry_on_race
def grant_prepared(context, grant_uuid, prepared, partial, reason):
    """Record what the donors of pending grant ``grant_uuid`` set up:
    ``prepared`` maps slab index -> ``(endpoint, remote_addr, rkey)``;
    slabs not in it are deleted, ``granted_mb`` is what remains. Returns
    the grant."""
    with _writer().using(context) as session:
        grant = _grant_for_update(session, grant_uuid)
        for slab in list(grant.slabs):
            if slab.index not in prepared:
                grant.slabs.remove(slab)
                continue
            slab.endpoint, slab.remote_addr, slab.rkey = prepared[slab.index]
        grant.granted_mb = sum(s.size_mb for s in grant.slabs)
        grant.partial = partial
        grant.reason = reason
        session.flush()
        return grant


@_retry_on_race
def grant_set_status(context, grant_uuid, status, slab_status,
                     reason=None, expected=None, unfreed=()):
    """Move grant ``grant_uuid`` to ``status`` and its slabs that hold
    memory to ``slab_status`` — but those of the donors in ``unfreed``,
    which did not confirm they freed them, to ``releasing``. ``reason``
    replaces the grant's when given. With ``expected`` (states), raise
    Conflict unless the grant is in one of them. Returns the grant."""
    with _writer().using(context) as session:
        grant = _grant_for_update(session, grant_uuid)
        if expected is not None and grant.status not in expected:
            raise exceptions.Conflict(reason='grant %s is %s, not %s' % (
                grant_uuid, grant.status, ' or '.join(expected)))
        grant.status = status
        if reason is not None:
            grant.reason = reason
        for slab in grant.slabs:
            if slab.status in SLAB_HOLDING:
                slab.status = ('releasing' if slab.donor_host in unfreed
                               else slab_status)
        session.flush()
        return grant


@_retry_on_race
def grant_move(context, grant_uuid, source_host, dest_host):
    """Make ``dest_host`` the consumer of active grant ``grant_uuid``,
    whose VM moved there from ``source_host``; nothing changes when it is
    the consumer already. Conflict when the grant is not active or is
    consumed by a third host. Returns the grant."""
    with _writer().using(context) as session:
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
    with _reader().using(context) as session:
        return session.query(models.Grant).filter_by(
            instance_uuid=instance_uuid, consumer_host=consumer_host,
            status='active').order_by(models.Grant.created_at,
                                      models.Grant.id).all()


@_retry_on_race
def grant_delete(context, grant_uuid):
    """Delete grant ``grant_uuid`` and its slabs (one that granted
    nothing)."""
    with _writer().using(context) as session:
        session.delete(_grant_for_update(session, grant_uuid))


def grants_in_status(context, statuses):
    """The grants whose status is one of ``statuses``, oldest first."""
    with _reader().using(context) as session:
        return session.query(models.Grant).filter(
            models.Grant.status.in_(list(statuses))).order_by(
            models.Grant.created_at, models.Grant.id).all()


def slabs_lent_by(context, donor_host):
    """The active slabs ``donor_host`` holds for active grants, the newest
    grants' first (their highest indexes first): ``[(grant, slab)]``."""
    with _reader().using(context) as session:
        rows = session.query(models.Slab, models.Grant).join(
            models.Grant).filter(
            models.Slab.donor_host == donor_host,
            models.Slab.status == 'active',
            models.Grant.status == 'active').order_by(
            models.Grant.created_at.desc(), models.Grant.id.desc(),
            models.Slab.index.desc()).all()
        return [(grant, slab) for slab, grant in rows]


@_retry_on_race
def grant_slabs_reclaimed(context, grant_uuid, indexes, status='reclaimed'):
    """Move the active slabs ``indexes`` of grant ``grant_uuid`` to
    ``status`` (reclaimed, or releasing when the donor did not confirm it
    freed them) and take their memory off the grant's ``granted_mb``;
    return the MiB taken."""
    with _writer().using(context) as session:
        grant = _grant_for_update(session, grant_uuid)
        taken = 0
        for slab in grant.slabs:
            if slab.index in indexes and slab.status == 'active':
                slab.status = status
                taken += slab.size_mb
        grant.granted_mb -= taken
        return taken


def slabs_releasing(context):
    """Slabs whose donor has not confirmed it freed them: ``{(grant uuid,
    donor host): [index, ...]}``."""
    with _reader().using(context) as session:
        rows = session.query(models.Grant.uuid, models.Slab.donor_host,
                             models.Slab.index).join(models.Grant).filter(
            models.Slab.status == 'releasing').order_by(
            models.Slab.index).all()
    result = {}
    for uuid, host, index in rows:
        result.setdefault((uuid, host), []).append(index)
    return result


@_retry_on_race
def slabs_released(context, grant_uuid, donor_host):
    """Mark the releasing slabs of ``grant_uuid`` on ``donor_host``
    released (the donor freed them)."""
    with _writer().using(context) as session:
        grant = _grant_for_update(session, grant_uuid)
        for slab in grant.slabs:
            if slab.donor_host == donor_host and slab.status == 'releasing':
                slab.status = 'released'


# The Placement job (memagg.scheduler.placement): the compute nodes whose
# MEMORY_MB allocation_ratio memagg sets, with the operator's ratio.

def placement_inventories(context):
    """Every PlacementInventory row, by host."""
    with _reader().using(context) as session:
        return session.query(models.PlacementInventory).order_by(
            models.PlacementInventory.host).all()


@_retry_on_race
def placement_inventory_take(context, host, original_allocation_ratio):
    """Record that memagg is about to set ``host``'s ratio, which the
    operator had at ``original_allocation_ratio``; a row already there is
    kept as it is (its original stays). Returns the row."""
    with _writer().using(context) as session:
        row = session.query(models.PlacementInventory).filter_by(
            host=host).first()
        if row is None:
            row = models.PlacementInventory(
                host=host,
                original_allocation_ratio=original_allocation_ratio)
            session.add(row)
            session.flush()
        return row


@_retry_on_race
def placement_inventory_applied(context, host, allocation_ratio):
    """Record the ratio memagg wrote for ``host``; NotFound without a
    row."""
    with _writer().using(context) as session:
        row = session.query(models.PlacementInventory).filter_by(
            host=host).with_for_update().first()
        if row is None:
            raise exceptions.NotFound(resource='Placement inventory',
                                      id=host)
        row.applied_allocation_ratio = allocation_ratio
        return row


def placement_inventory_release(context, host):
    """Forget ``host`` (its operator's ratio is back, or it is gone from
    Placement); nothing when there is no row."""
    with _writer().using(context) as session:
        session.execute(sa.delete(models.PlacementInventory).where(
            models.PlacementInventory.host == host))
