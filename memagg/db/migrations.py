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

"""Live migrations of instances, queued by a plan or an operator and run by
memagg.scheduler.migration: every step's state is written here before the
next step, so a restarted scheduler resumes it. (The schema's migrations are
memagg.db.migration.)
"""
from oslo_utils import uuidutils

from memagg.common import exceptions
from memagg.db import audits
from memagg.db import facade
from memagg.db.sqlalchemy import models
from memagg.notifications import audit as audit_notifications
from memagg.notifications import migration as migration_notifications


#: How GET lists migrations: its model, the column a marker names, the
#: default sort, and the columns a request may filter and sort on.
LISTING = dict(model=models.Migration, key='uuid',
               sort=['created_at'],
               filters=('instance_uuid', 'source_host', 'dest_host',
                        'status'),
               sort_keys=('created_at', 'updated_at',
                          'duration_s'))


def migration_get(context, uuid):
    return facade.get_one(context, models.Migration, 'uuid', uuid, 'Migration')


def migrations_of_audit(context, audit_uuid):
    """The migrations of audit ``audit_uuid``'s actions: a dict action id
    -> Migration."""
    with facade.reader().using(context) as session:
        rows = session.query(models.Migration).join(
            models.AuditAction,
            models.Migration.audit_action_id == models.AuditAction.id).join(
            models.Audit).filter(models.Audit.uuid == audit_uuid).all()
        return {row.audit_action_id: row for row in rows}


def _queued_migration(session, action):
    """The migration of migrate ``action`` (locked by the caller), created
    ``queued`` from the action's VM and hosts when it has none yet, and
    whether it was created."""
    row = session.query(models.Migration).filter_by(
        audit_action_id=action.id).first()
    if row is not None:
        return row, False
    row = models.Migration(
        uuid=uuidutils.generate_uuid(), status='queued',
        instance_uuid=action.instance_uuid,
        source_host=action.source_host, dest_host=action.dest_host,
        audit_action_id=action.id, attempts=0)
    session.add(row)
    session.flush()
    return row, True


@facade.retry_on_race
def migration_queue(context, action_id):
    """The migration of migrate action ``action_id``, created ``queued``
    (from the action's VM and hosts) when it has none yet."""
    with facade.writer().using(context) as session:
        row, created = _queued_migration(
            session, audits.action_for_update(session, action_id))
    if created:
        migration_notifications.migration_changed(context, row, None)
    return row


#: migrations.status of a migration not yet ended.
MIGRATION_BUSY = ('queued', 'running')


@facade.retry_on_race
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
    with facade.writer().using(context) as session:
        instance = session.query(models.Instance).filter_by(
            uuid=instance_uuid).with_for_update().first()
        if instance is None:
            raise exceptions.NotFound(resource='Instance', id=instance_uuid)
        busy = _busy(session, instance_uuid).first()
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
        row, _ = _queued_migration(session, action)
    audit_notifications.audit_changed(context, audit, None)
    migration_notifications.migration_changed(context, row, None)
    return audit.uuid, row


def _migration_for_update(session, migration_id):
    return facade.locked(session, models.Migration, 'Migration', migration_id)


def _set_action_state(session, migration, state):
    """Move the action of ``migration`` (if any) to ``state``; return what
    its notification needs, ``(action, previous state, audit uuid)``, or
    None."""
    if migration.audit_action_id is None:
        return None
    action = audits.action_for_update(session, migration.audit_action_id)
    previous, action.state = action.state, state
    return action, previous, action.audit.uuid


def _notify(context, row, previous, action_change):
    migration_notifications.migration_changed(context, row, previous)
    if action_change is not None:
        audit_notifications.action_changed(context, *action_change)


@facade.retry_on_race
def migration_start_attempt(context, migration_id):
    """Count one more attempt of migration ``migration_id`` and mark it and
    its action running, before the compute service is asked. The row is
    not written again until the attempt ends, so its ``updated_at`` tells
    when the attempt started. Returns the migration."""
    with facade.writer().using(context) as session:
        row = _migration_for_update(session, migration_id)
        previous, row.status = row.status, 'running'
        row.attempts += 1
        action_change = _set_action_state(session, row, 'running')
        session.flush()
    _notify(context, row, previous, action_change)
    return row


@facade.retry_on_race
def migration_attempt_failed(context, migration_id, error,
                             bytes_transferred=None):
    """Record why an attempt of migration ``migration_id`` failed (it stays
    running: another attempt follows). Returns the migration."""
    with facade.writer().using(context) as session:
        row = _migration_for_update(session, migration_id)
        row.error = error
        if bytes_transferred is not None:
            row.bytes_transferred = bytes_transferred
        return row


@facade.retry_on_race
def migration_finish(context, migration_id, status, duration_s=None,
                     error=None, bytes_transferred=None, note=None):
    """End migration ``migration_id`` as ``status`` (succeeded or failed)
    and its action likewise; ``duration_s``, ``error`` and
    ``bytes_transferred`` are stored when given, and ``note`` is appended
    to the audit's reason. Returns the migration."""
    with facade.writer().using(context) as session:
        row = _migration_for_update(session, migration_id)
        previous, row.status = row.status, status
        for column, value in (('duration_s', duration_s), ('error', error),
                              ('bytes_transferred', bytes_transferred)):
            if value is not None:
                setattr(row, column, value)
        action_change = _set_action_state(session, row, status)
        if action_change is not None:
            audits.note_on_audit(session, action_change[0], note)
        session.flush()
    _notify(context, row, previous, action_change)
    return row


#: Columns of a migration its executor records besides its status.
MIGRATION_COSTS = ('bytes_transferred', 'downtime_ms', 'remote_share',
                   'remote_mb', 'local_copy_left_mb')


@facade.retry_on_race
def migration_record(context, migration_id, **costs):
    """Store what migration ``migration_id`` cost or left to do (columns
    of MIGRATION_COSTS; None values are skipped). Returns the
    migration."""
    unknown = sorted(set(costs) - set(MIGRATION_COSTS))
    if unknown:
        raise exceptions.InvalidParameter(
            field=', '.join(unknown), reason='not a cost of a migration')
    with facade.writer().using(context) as session:
        row = _migration_for_update(session, migration_id)
        for column, value in costs.items():
            if value is not None:
                setattr(row, column, value)
        return row


def migrations_copying(context):
    """Succeeded migrations whose destination still rebuilds a durability
    copy (local_copy_left_mb > 0), oldest first."""
    with facade.reader().using(context) as session:
        return session.query(models.Migration).filter(
            models.Migration.status == 'succeeded',
            models.Migration.local_copy_left_mb > 0).order_by(
            models.Migration.id).all()


def migrations_since(context, since):
    """The migrations queued at ``since`` or later, in any status, oldest
    first: what consolidation rounds know of recent moves."""
    with facade.reader().using(context) as session:
        return session.query(models.Migration).filter(
            models.Migration.created_at >= since).order_by(
            models.Migration.created_at, models.Migration.id).all()


def _busy(session, instance_uuid):
    return session.query(models.Migration).filter(
        models.Migration.instance_uuid == instance_uuid,
        models.Migration.status.in_(MIGRATION_BUSY))


def migration_running_for(context, instance_uuid):
    """The migration of ``instance_uuid`` queued or running, or None."""
    with facade.reader().using(context) as session:
        return _busy(session, instance_uuid).first()


def migration_busy_locked(session, instance_uuid):
    """In the caller's transaction, the migration of ``instance_uuid``
    queued or running, or None, read with a shared lock: the committed
    row, not the transaction's snapshot, so that a move of the VM's slabs
    checked this way and a migration's look at them
    (memagg.db.tier_moves.slabs_of_migrating_instance) cannot both miss
    the other."""
    return _busy(session, instance_uuid).with_for_update(read=True).first()
