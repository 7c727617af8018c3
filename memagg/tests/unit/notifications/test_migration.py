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

"""Notifications of migrations: their status and their actions."""
from memagg.db import migrations as db_migrations
from memagg.tests.unit.notifications.sent import data
from memagg.tests.unit.notifications.sent import instance


def test_a_migration_tells_its_status_and_its_actions(
        notifications, admin_context):
    audit_uuid, migration = db_migrations.migration_request(
        admin_context, instance(), 'host-1', 'host-2', 'operator')
    db_migrations.migration_start_attempt(admin_context, migration.id)
    db_migrations.migration_finish(admin_context, migration.id,
                                   'succeeded', duration_s=4.5)

    changes = [(event, data(p, 'previous_state', 'state', 'status'))
               for event, p in notifications.changes()]
    assert changes == [
        ('memagg.audit.update', (None, 'recommended', None)),
        ('memagg.migration.update', (None, None, 'queued')),
        ('memagg.migration.update', ('queued', None, 'running')),
        ('memagg.action.update', ('pending', 'running', None)),
        ('memagg.migration.update', ('running', None, 'succeeded')),
        ('memagg.action.update', ('running', 'succeeded', None))]
    last = notifications.messages()[-2]['payload']
    assert data(last, 'uuid', 'attempts', 'duration_s') == (
        migration.uuid, 1, 4.5)
    assert data(notifications.messages()[-1]['payload'],
                'audit_uuid') == (audit_uuid,)
