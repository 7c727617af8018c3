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

"""memagg.db's calls for executing a plan on SQLite, MariaDB and
PostgreSQL: action states with notes on the audit, a migration per migrate
action and its attempts, host states."""
import concurrent.futures

import pytest

from memagg.common import exceptions
from memagg.db import audits as db_audits
from memagg.db import hosts as db_hosts
from memagg.db import migrations as db_migrations
from memagg.db import reports as db_reports

pytestmark = pytest.mark.functional

VM_A = '11111111-1111-4111-8111-111111111111'
VM_B = '22222222-2222-4222-8222-222222222222'


@pytest.fixture
def db(any_db, admin_context):
    return admin_context


@pytest.fixture
def audit(db):
    """An executing audit: migrate VM A and VM B off h1, power h1 off."""
    uuid = db_audits.audit_create(db, {'state': 'planning'}).uuid
    db_audits.audit_store_plan(db, uuid, [
        dict(action_type='migrate', instance_uuid=vm, source_host='h1',
             dest_host=dest, reason='underload:cpu+memory')
        for vm, dest in ((VM_A, 'h2'), (VM_B, 'h3'))] + [
        dict(action_type='power_off', source_host='h1',
             reason='underload:cpu+memory')],
        state='executing', reason='planned on 2 hosts')
    return uuid


def _actions(db, uuid):
    return db_audits.audit_get(db, uuid).actions


def test_a_migration_is_queued_once_per_action(db, audit):
    action = _actions(db, audit)[0]
    first = db_migrations.migration_queue(db, action.id)
    again = db_migrations.migration_queue(db, action.id)

    assert first.uuid == again.uuid
    assert (first.status, first.attempts, first.instance_uuid,
            first.source_host, first.dest_host) == (
        'queued', 0, VM_A, 'h1', 'h2')
    assert {a: m.uuid for a, m in
            db_migrations.migrations_of_audit(db, audit).items()} == {
        action.id: first.uuid}


def test_attempts_and_the_end_move_the_action_with_the_migration(db, audit):
    action = _actions(db, audit)[0]
    row = db_migrations.migration_queue(db, action.id)

    row = db_migrations.migration_start_attempt(db, row.id)
    assert (row.status, row.attempts) == ('running', 1)
    assert _actions(db, audit)[0].state == 'running'
    db_migrations.migration_attempt_failed(db, row.id, 'back on h1', 1024)
    row = db_migrations.migration_start_attempt(db, row.id)
    row = db_migrations.migration_finish(db, row.id, 'failed', duration_s=2.5,
                                         error='refused (409)',
                                         bytes_transferred=4096,
                                         note='action 0 failed: refused')

    assert (row.status, row.attempts, row.duration_s, row.error,
            row.bytes_transferred) == ('failed', 2, 2.5, 'refused (409)',
                                       4096)
    assert _actions(db, audit)[0].state == 'failed'
    assert db_audits.audit_get(db, audit).reason == (
        'planned on 2 hosts\naction 0 failed: refused')


def test_notes_of_concurrent_actions_all_reach_the_audit(db, audit):
    actions = _actions(db, audit)
    with concurrent.futures.ThreadPoolExecutor(len(actions)) as pool:
        list(pool.map(lambda a: db_audits.audit_action_set_state(
            db, a.id, 'skipped', note='note %d' % a.sequence), actions))

    assert [a.state for a in _actions(db, audit)] == ['skipped'] * 3
    reason = db_audits.audit_get(db, audit).reason.splitlines()
    assert reason[0] == 'planned on 2 hosts'
    assert sorted(reason[1:]) == ['note 0', 'note 1', 'note 2']


def test_a_host_is_put_on_standby_and_back(db):
    db_reports.report_ingest(db, dict(name='h1'), [], [])
    db_hosts.host_set_state(db, 'h1', 'standby')
    assert db_hosts.host_get(db, 'h1').state == 'standby'
    db_hosts.host_set_state(db, 'h1', 'active')
    assert db_hosts.host_get(db, 'h1').state == 'active'
    with pytest.raises(exceptions.NotFound):
        db_hosts.host_set_state(db, 'h9', 'standby')
