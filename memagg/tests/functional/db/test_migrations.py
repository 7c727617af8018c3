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

"""memagg.db.migrations on SQLite, MariaDB and PostgreSQL (real servers):
a migration queued once per action, and its attempts and end moving the
action with it."""
import pytest

from memagg.db import audits as db_audits
from memagg.db import migrations as db_migrations
from memagg.tests.unit.db.rows import VM_A

pytestmark = pytest.mark.functional


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
