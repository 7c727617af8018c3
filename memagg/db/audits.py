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

"""Audits (consolidation plans), their actions, and their purge after the
retention.
"""
import datetime

from oslo_utils import timeutils
from oslo_utils import uuidutils
import sqlalchemy as sa

from memagg.common import exceptions
from memagg.conf import CONF
from memagg.db import facade
from memagg.db.sqlalchemy import models
from memagg.notifications import audit as audit_notifications


#: The states of an audit still being worked on; any other state is an
#: end, so a new final state is purged without a change here.
AUDIT_ACTIVE_STATES = ('pending', 'planning', 'executing')
#: The states an audit ends in, on which its finished_at is set.
AUDIT_FINAL_STATES = ('succeeded', 'partial', 'failed')

#: How GET lists audits: its model, the column a marker names, the
#: default sort, and the columns a request may filter and sort on.
LISTING = dict(model=models.Audit, key='uuid', sort=['created_at'],
               filters=('state',),
               sort_keys=('created_at', 'finished_at'))


def audit_get(context, uuid):
    return facade.get_one(context, models.Audit, 'uuid', uuid, 'Audit')


def audit_create(context, values):
    """Create an audit from ``values`` (Audit columns; ``uuid`` generated
    when absent, ``state`` pending by default); return it."""
    facade.check_columns(models.Audit, values, 'audit')
    values = dict(values)
    values.setdefault('uuid', uuidutils.generate_uuid())
    values.setdefault('state', 'pending')
    with facade.writer().using(context) as session:
        row = models.Audit(**values)
        session.add(row)
        session.flush()
    audit_notifications.audit_changed(context, row, None)
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


@facade.retry_on_race
def audit_set_state(context, uuid, state, reason=None, expected=None):
    """Move audit ``uuid`` to ``state`` (with ``reason`` when given);
    ``finished_at`` is set on succeeded, partial and failed. With
    ``expected`` (a tuple of states), raise Conflict unless the audit is in
    one of them. Returns the audit."""
    with facade.writer().using(context) as session:
        row = _audit_for_update(session, uuid, expected)
        previous = row.state
        _set_audit_state(row, state, reason)
        session.flush()
    audit_notifications.audit_changed(context, row, previous)
    return row


@facade.retry_on_race
def audit_compare_and_set(context, uuid, expected, state):
    """Move audit ``uuid`` from state ``expected`` to ``state``
    (facade.compare_and_set). Returns ``(won, state)``, the audit's state
    after the statement; NotFound when there is no such audit."""
    with facade.writer().using(context) as session:
        won, row = facade.compare_and_set(
            session, models.Audit, 'Audit', ('uuid', uuid), 'state',
            expected, state)
    if won:
        audit_notifications.audit_changed(context, row, expected)
    return won, row.state


@facade.retry_on_race
def audit_store_plan(context, uuid, actions, unplaced=None,
                     state='recommended', reason=None, expected=None):
    """Store a plan on audit ``uuid`` in one transaction: ``actions`` (dicts
    of AuditAction columns, in execution order; their sequence is their
    position, any earlier actions are replaced), ``unplaced`` (what the plan
    left out and why) and the audit's new ``state`` and ``reason``. With
    ``expected``, raise Conflict unless the audit is in one of those
    states. Returns the audit with its actions."""
    for values in actions:
        facade.check_columns(models.AuditAction, values, 'actions')
    with facade.writer().using(context) as session:
        row = _audit_for_update(session, uuid, expected)
        previous = row.state
        row.actions = []
        session.flush()
        row.actions = [models.AuditAction(**dict(values, sequence=i))
                       for i, values in enumerate(actions)]
        row.unplaced = unplaced
        _set_audit_state(row, state, reason)
        session.flush()
    audit_notifications.audit_changed(context, row, previous)
    return row


def audits_in_state(context, states):
    """The audits whose state is one of ``states``, oldest first."""
    with facade.reader().using(context) as session:
        return session.query(models.Audit).filter(
            models.Audit.state.in_(list(states))).order_by(
            models.Audit.created_at, models.Audit.id).all()


def action_for_update(session, action_id):
    """Audit action ``action_id``, locked in the caller's transaction."""
    return facade.locked(session, models.AuditAction, 'Audit action',
                         action_id)


def note_on_audit(session, action, note):
    """Append ``note`` (an action's outcome) to its audit's reason."""
    if note:
        # Locked: the notes of actions ending at once must all be kept.
        audit = session.query(models.Audit).filter_by(
            id=action.audit_id).with_for_update().one()
        audit.reason = '\n'.join(filter(None, [audit.reason, note]))


@facade.retry_on_race
def audit_action_set_state(context, action_id, state, note=None):
    """Move audit action ``action_id`` to ``state``; ``note`` (why it
    failed or was skipped) is appended to its audit's reason in the same
    transaction. Returns the action."""
    with facade.writer().using(context) as session:
        row = action_for_update(session, action_id)
        previous, row.state = row.state, state
        note_on_audit(session, row, note)
        audit_uuid = row.audit.uuid
        session.flush()
    audit_notifications.action_changed(context, row, previous, audit_uuid)
    return row


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
    with facade.writer().using(context) as session:
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
