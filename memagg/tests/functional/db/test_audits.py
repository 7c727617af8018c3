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

"""memagg.db.audits on SQLite, MariaDB and PostgreSQL (real servers):
stored plans, state changes that check the state they expect, the notes
of concurrent actions, and the purge of ended audits."""
import concurrent.futures

import pytest
import sqlalchemy as sa

from memagg.common import exceptions
from memagg.db import audits as db_audits
from memagg.db import facade as db_facade
from memagg.db.sqlalchemy import models
from memagg.tests.unit.db import rows
from memagg.tests.unit.db.rows import VM_A, VM_B

pytestmark = pytest.mark.functional

MISSING = '99999999-9999-4999-8999-999999999999'


def test_plan_is_stored_in_order_and_replaces_an_earlier_one(db):
    audit = db_audits.audit_create(db, dict(memory_basis='booked',
                                            auto_execute=True))
    assert (audit.state, audit.auto_execute) == ('pending', True)
    db_audits.audit_set_state(db, audit.uuid, 'planning')
    first = [dict(action_type='power_off', source_host='h9',
                  reason='underload:cpu+memory')]
    db_audits.audit_store_plan(db, audit.uuid, first, state='planning')
    actions = [
        dict(action_type='migrate', instance_uuid=VM_A, source_host='h1',
             dest_host='h2', reason='overload:memory'),
        dict(action_type='migrate', instance_uuid=VM_B, source_host='h3',
             dest_host='h2', reason='underload:cpu+memory'),
        dict(action_type='power_off', source_host='h3',
             reason='underload:cpu+memory')]
    unplaced = {'instances': {}, 'hosts': {'h4': 'VM x fits nowhere'}}

    db_audits.audit_store_plan(db, audit.uuid, actions, unplaced,
                               expected=('planning',))

    stored = db_audits.audit_get(db, audit.uuid)
    assert stored.state == 'recommended'
    assert stored.unplaced == unplaced
    assert [(a.sequence, a.action_type, a.instance_uuid, a.source_host,
             a.dest_host, a.reason, a.state) for a in stored.actions] == [
        (i, a['action_type'], a.get('instance_uuid'), a['source_host'],
         a.get('dest_host'), a['reason'], 'pending')
        for i, a in enumerate(actions)]
    assert stored.finished_at is None


def test_state_change_checks_the_expected_state(db):
    audit = db_audits.audit_create(db, {})

    with pytest.raises(exceptions.Conflict) as error:
        db_audits.audit_set_state(db, audit.uuid, 'executing',
                                  expected=('recommended',))
    assert 'is pending, not recommended' in str(error.value)

    db_audits.audit_set_state(db, audit.uuid, 'failed', reason='no hosts')
    failed = db_audits.audit_get(db, audit.uuid)
    assert (failed.state, failed.reason) == ('failed', 'no hosts')
    assert failed.finished_at is not None
    with pytest.raises(exceptions.NotFound):
        db_audits.audit_set_state(db, MISSING, 'failed')


def test_audits_in_state_oldest_first(db):
    rows.insert(models.Audit,
                dict(uuid=VM_B, state='planning',
                     created_at=rows.ago(minutes=1)),
                dict(uuid=VM_A, state='planning',
                     created_at=rows.ago(minutes=2)),
                dict(state='succeeded'))

    assert [a.uuid for a in db_audits.audits_in_state(
        db, ['planning', 'pending'])] == [VM_A, VM_B]


def _actions(db, uuid):
    return db_audits.audit_get(db, uuid).actions


def test_notes_of_concurrent_actions_all_reach_the_audit(db, audit):
    actions = _actions(db, audit)
    with concurrent.futures.ThreadPoolExecutor(len(actions)) as pool:
        list(pool.map(lambda a: db_audits.audit_action_set_state(
            db, a.id, 'skipped', note='note %d' % a.sequence), actions))

    assert [a.state for a in _actions(db, audit)] == ['skipped'] * 3
    reason = db_audits.audit_get(db, audit).reason.splitlines()
    assert reason[0] == 'planned on 2 hosts'
    assert sorted(reason[1:]) == ['note 0', 'note 1', 'note 2']


def _audit(state, hours, created_hours=None):
    """An audit in ``state`` last changed ``hours`` ago (None: never
    changed, created ``created_hours`` ago) with two actions, the first
    with its migration; returns the audit's id."""
    created = rows.ago(hours=hours + 1 if created_hours is None
                       else created_hours)
    updated = None if hours is None else rows.ago(hours=hours)
    [audit] = rows.insert(models.Audit, dict(state=state, created_at=created,
                                             updated_at=updated))
    first, _ = rows.insert(models.AuditAction, dict(audit_id=audit),
                           dict(audit_id=audit))
    rows.insert(models.Migration, dict(audit_action_id=first))
    return audit


def _left():
    """What is left: audit ids, the audit ids of the actions, the audit id
    (None without one) of each migration's action."""
    action = models.AuditAction
    with db_facade.get_engine().connect() as connection:
        audits = connection.scalars(sa.select(models.Audit.id)).all()
        actions = connection.scalars(sa.select(action.audit_id)).all()
        migrations = connection.scalars(
            sa.select(action.audit_id).select_from(models.Migration)
            .outerjoin(action,
                       action.id == models.Migration.audit_action_id)).all()
    return sorted(audits), sorted(actions), sorted(migrations,
                                                   key=lambda i: i or 0)


def test_purge_deletes_ended_audits_with_actions_and_migrations(db):
    for state in ('succeeded', 'partial', 'failed', 'recommended'):
        _audit(state, hours=30)
    _audit('failed', hours=None, created_hours=30)
    kept = [_audit('succeeded', hours=1),
            _audit('recommended', hours=None, created_hours=1)]
    kept += [_audit(state, hours=1000)
             for state in ('pending', 'planning', 'executing')]
    # A migration whose action is gone already is no audit's.
    rows.insert(models.Migration, dict(created_at=rows.ago(hours=30)))

    assert db_audits.purge_audits(db, older_than_hours=24) == 5

    assert _left() == (kept, sorted(kept * 2), [None] + kept)


def test_purge_keeps_audits_for_their_retention(db, conf):
    recent = _audit('succeeded', hours=100)
    _audit('failed', hours=800)

    # The default: 720 hours.
    assert db_audits.purge_audits(db) == 1
    assert _left()[0] == [recent]
    conf.config(audit_retention_hours=50, group='consolidation')
    assert db_audits.purge_audits(db) == 1
    assert db_audits.purge_audits(db, older_than_hours=0) == 0
    assert _left() == ([], [], [])


def test_purge_deletes_audits_in_batches(db, monkeypatch):
    monkeypatch.setattr(db_audits, '_PURGE_BATCH', 2)
    for _ in range(5):
        _audit('succeeded', hours=10)
    kept = _audit('executing', hours=10)

    assert db_audits.purge_audits(db, older_than_hours=1) == 5

    assert _left() == ([kept], [kept, kept], [kept])
