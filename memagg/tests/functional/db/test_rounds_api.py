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

"""memagg.db's calls for consolidation rounds on SQLite, MariaDB and
PostgreSQL: latest samples per host and per VM (window functions), the
hosts a round considers, audits and their stored plans, the purge of host
samples and of ended audits."""
import datetime

from oslo_utils import timeutils
import pytest
import sqlalchemy as sa

from memagg.common import exceptions
from memagg.db import audits as db_audits
from memagg.db import facade as db_facade
from memagg.db import grants as db_grants
from memagg.db import hosts as db_hosts
from memagg.db import instances as db_instances
from memagg.db import reports as db_reports
from memagg.db import samples as db_samples
from memagg.db.sqlalchemy import models
from memagg.tests.unit.db import rows

pytestmark = pytest.mark.functional

VM_A = '11111111-1111-4111-8111-111111111111'
VM_B = '22222222-2222-4222-8222-222222222222'
MISSING = '99999999-9999-4999-8999-999999999999'


@pytest.fixture
def db(any_db, admin_context):
    return admin_context


def _at(minutes):
    return rows.ago(hours=1) + datetime.timedelta(minutes=minutes)


def test_report_stores_a_host_sample_at_the_report_time(db):
    at = rows.ago(minutes=5)
    db_reports.report_ingest(db, dict(name='h1', memory_mb=4096), [], [],
                             reported_at=at,
                             host_sample=dict(cpu_util=0.25, mem_used_mb=700))

    assert db_samples.host_samples_latest(db, ['h1'], 10) == {
        'h1': [(0.25, 700)]}
    with db_facade.get_engine().connect() as connection:
        stored = connection.execute(sa.select(
            models.HostSample.host, models.HostSample.sampled_at)).all()
    assert stored == [('h1', at)]


def test_latest_host_samples_are_the_newest_n_oldest_first(db):
    rows.insert(models.HostSample, *[
        dict(host=host, sampled_at=_at(i), cpu_util=i / 10,
             mem_used_mb=100 * i)
        for host in ('h1', 'h2') for i in range(5)])

    latest = db_samples.host_samples_latest(db, ['h1', 'h2', 'h3'], 3)

    assert latest['h1'] == [(0.2, 200), (0.3, 300), (0.4, 400)]
    assert latest['h2'] == latest['h1']
    assert latest['h3'] == []


def test_latest_cpu_skips_samples_without_cpu(db):
    rows.insert(models.WssSample, *(
        [dict(instance_uuid=VM_A, sampled_at=_at(i), cpu_util=float(i))
         for i in range(4)]
        + [dict(instance_uuid=VM_A, sampled_at=_at(9), cpu_util=None),
           dict(instance_uuid=VM_B, sampled_at=_at(1), cpu_util=0.5)]))

    latest = db_samples.instance_cpu_latest(db, [VM_A, VM_B], 2)

    assert latest == {VM_A: [2.0, 3.0], VM_B: [0.5]}


def test_round_hosts_are_the_fresh_and_the_standby(db):
    rows.insert(models.Host,
                dict(name='fresh', reported_at=rows.ago(seconds=10)),
                dict(name='stale', reported_at=rows.ago(hours=1)),
                dict(name='asleep', reported_at=rows.ago(days=2),
                     state='standby'))

    hosts = db_hosts.hosts_for_round(db, rows.ago(minutes=1))

    assert [h.name for h in hosts] == ['asleep', 'fresh']


def test_instances_on_hosts_leave_out_gone_ones(db):
    rows.insert(models.Instance,
                dict(uuid=VM_A, host='h1'),
                dict(uuid=VM_B, host='h1', status='gone'),
                dict(host='h2'))

    assert [i.uuid for i in db_instances.instances_on_hosts(db, ['h1'])] == [
        VM_A]


def test_granted_memory_counts_active_grants_per_consumer(db):
    rows.insert(models.Grant,
                dict(consumer_host='h1', granted_mb=256),
                dict(consumer_host='h1', granted_mb=512),
                dict(consumer_host='h1', granted_mb=1024, status='released'))

    assert db_grants.granted_mb_by_consumer(db) == {'h1': 768}


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


def test_purge_drops_old_host_samples_too(db):
    rows.insert(models.HostSample,
                dict(host='h1', sampled_at=rows.ago(hours=3), cpu_util=0.1,
                     mem_used_mb=1),
                dict(host='h1', sampled_at=timeutils.utcnow(), cpu_util=0.2,
                     mem_used_mb=2))
    rows.insert(models.WssSample, dict(sampled_at=rows.ago(hours=3)))

    assert db_samples.purge_wss_samples(db, older_than_hours=1) == 2
    assert db_samples.host_samples_latest(db, ['h1'], 5) == {'h1': [(0.2, 2)]}


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
