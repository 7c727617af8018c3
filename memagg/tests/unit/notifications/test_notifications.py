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

"""Versioned notifications of audits, actions, grants and migrations, sent
through oslo.messaging's ``test`` notification driver: one per committed
state change, none for a compare-and-set that lost."""
import uuid

import oslo_messaging as messaging
from oslo_messaging.notify import _impl_test
import pytest

from memagg.common import rpc
from memagg.db import audits as db_audits
from memagg.db import grants as db_grants
from memagg.db import migrations as db_migrations
from memagg.db.sqlalchemy import models
from memagg.tests.unit.db import rows


@pytest.fixture
def notifications(conf, sqlite_db):
    """The notifications sent: a list of oslo.messaging messages (dicts
    with event_type, publisher_id, priority, payload)."""
    rpc.cleanup()
    # Registers [oslo_messaging_notifications] before it is overridden.
    messaging.get_notification_transport(conf.conf, url='fake://').cleanup()
    conf.config(driver=['test'], group='oslo_messaging_notifications')
    conf.config(host='sched-1')
    rpc.init(conf.conf, url='fake://', binary='memagg-scheduler')
    _impl_test.reset()
    yield _Sent()
    rpc.cleanup()


class _Sent:
    def messages(self):
        return [message for _ctxt, message, _priority, _retry
                in _impl_test.NOTIFICATIONS]

    def changes(self):
        """``(event_type, payload's data)`` of each message, checking the
        envelope every message shares."""
        result = []
        for message in self.messages():
            assert message['publisher_id'] == 'memagg-scheduler:sched-1'
            assert message['priority'] == 'INFO'
            payload = message['payload']
            assert payload['memagg_object.namespace'] == 'memagg'
            assert payload['memagg_object.version'] == '1.0'
            result.append((message['event_type'], payload))
        return result


def _data(payload, *names):
    return tuple(payload['memagg_object.data'].get(n) for n in names)


def _instance():
    """A VM in the database (a migration is asked for a known one)."""
    vm = str(uuid.uuid4())
    rows.insert(models.Instance, dict(uuid=vm))
    return vm


def test_an_audit_tells_each_state_change_once(notifications,
                                               admin_context):
    audit = db_audits.audit_create(admin_context, {})
    assert db_audits.audit_compare_and_set(admin_context, audit.uuid,
                                           'pending', 'planning') == (
        True, 'planning')
    # A compare-and-set that lost changed nothing, and tells nothing.
    assert db_audits.audit_compare_and_set(admin_context, audit.uuid,
                                           'pending', 'planning') == (
        False, 'planning')
    db_audits.audit_store_plan(admin_context, audit.uuid, [])
    db_audits.audit_set_state(admin_context, audit.uuid, 'failed',
                              reason='no host answered')

    changes = notifications.changes()
    assert [(event, p['memagg_object.name']) for event, p in changes] == [
        ('memagg.audit.update', 'AuditPayload')] * 4
    assert [_data(p, 'uuid', 'previous_state', 'state', 'reason')
            for _, p in changes] == [
        (audit.uuid, None, 'pending', None),
        (audit.uuid, 'pending', 'planning', None),
        (audit.uuid, 'planning', 'recommended', None),
        (audit.uuid, 'recommended', 'failed', 'no host answered')]
    # An audit that ended says when.
    assert changes[-1][1]['memagg_object.data']['finished_at']
    assert changes[0][1]['memagg_object.data']['finished_at'] is None


def test_an_action_tells_its_state_and_its_audit(notifications,
                                                 admin_context):
    audit = db_audits.audit_create(admin_context, {})
    vm = str(uuid.uuid4())
    plan = db_audits.audit_store_plan(admin_context, audit.uuid, [dict(
        action_type='migrate', instance_uuid=vm, source_host='host-1',
        dest_host='host-2')])
    # The audit's own are the test above's.
    _impl_test.reset()

    db_audits.audit_action_set_state(admin_context, plan.actions[0].id,
                                     'skipped', note='host-2 is gone')

    [(event, payload)] = notifications.changes()
    assert (event, payload['memagg_object.name']) == (
        'memagg.action.update', 'ActionPayload')
    assert _data(payload, 'audit_uuid', 'sequence', 'action_type',
                 'instance_uuid', 'source_host', 'dest_host',
                 'previous_state', 'state') == (
        audit.uuid, 0, 'migrate', vm, 'host-1', 'host-2', 'pending',
        'skipped')


def test_a_grant_tells_its_status_but_not_its_secret(
        notifications, admin_context):
    grant_uuid = str(uuid.uuid4())
    rows.insert(models.Grant, dict(uuid=grant_uuid))

    assert db_grants.grant_compare_and_set(
        admin_context, grant_uuid, 'active', 'releasing')[0]
    assert not db_grants.grant_compare_and_set(
        admin_context, grant_uuid, 'active', 'releasing')[0]
    db_grants.grant_set_status(admin_context, grant_uuid, 'failed',
                               'releasing', reason='host-2 never answered',
                               expected=('releasing',))

    changes = notifications.changes()
    assert [(event, p['memagg_object.name']) for event, p in changes] == [
        ('memagg.grant.update', 'GrantPayload')] * 2
    assert [_data(p, 'uuid', 'previous_state', 'status', 'granted_mb',
                  'reason') for _, p in changes] == [
        (grant_uuid, 'active', 'releasing', 256, None),
        (grant_uuid, 'releasing', 'failed', 256, 'host-2 never answered')]
    assert all('secret' not in p['memagg_object.data'] for _, p in changes)


def test_a_migration_tells_its_status_and_its_actions(
        notifications, admin_context):
    audit_uuid, migration = db_migrations.migration_request(
        admin_context, _instance(), 'host-1', 'host-2', 'operator')
    db_migrations.migration_start_attempt(admin_context, migration.id)
    db_migrations.migration_finish(admin_context, migration.id,
                                   'succeeded', duration_s=4.5)

    changes = [(event, _data(p, 'previous_state', 'state', 'status'))
               for event, p in notifications.changes()]
    assert changes == [
        ('memagg.audit.update', (None, 'recommended', None)),
        ('memagg.migration.update', (None, None, 'queued')),
        ('memagg.migration.update', ('queued', None, 'running')),
        ('memagg.action.update', ('pending', 'running', None)),
        ('memagg.migration.update', ('running', None, 'succeeded')),
        ('memagg.action.update', ('running', 'succeeded', None))]
    last = notifications.messages()[-2]['payload']
    assert _data(last, 'uuid', 'attempts', 'duration_s') == (
        migration.uuid, 1, 4.5)
    assert _data(notifications.messages()[-1]['payload'],
                 'audit_uuid') == (audit_uuid,)


def test_a_notification_that_cannot_be_sent_fails_nothing(
        notifications, admin_context, monkeypatch, caplog):
    def refuse(*args, **kwargs):
        raise messaging.MessageDeliveryFailure('the bus is gone')
    monkeypatch.setattr(rpc.get_notifier(), 'info', refuse)
    audit = db_audits.audit_create(admin_context, {})

    assert db_audits.audit_compare_and_set(admin_context, audit.uuid,
                                           'pending', 'planning') == (
        True, 'planning')
    assert db_audits.audit_get(admin_context, audit.uuid).state == 'planning'
    assert 'Could not send notification memagg.audit.update' in caplog.text
    assert 'the bus is gone' in caplog.text


def test_without_a_driver_no_notifier_is_made(conf, sqlite_db,
                                              admin_context):
    rpc.cleanup()
    rpc.init(conf.conf, url='fake://')
    try:
        assert rpc.get_notifier() is None
        audit = db_audits.audit_create(admin_context, {})
        assert db_audits.audit_set_state(admin_context, audit.uuid,
                                         'planning').state == 'planning'
    finally:
        rpc.cleanup()
