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

"""Notifications of audits and their actions: one per committed state
change, none for a compare-and-set that lost."""
import uuid

from oslo_messaging.notify import _impl_test

from memagg.db import audits as db_audits
from memagg.tests.unit.notifications.sent import data


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
    assert [data(p, 'uuid', 'previous_state', 'state', 'reason')
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
    assert data(payload, 'audit_uuid', 'sequence', 'action_type',
                'instance_uuid', 'source_host', 'dest_host',
                'previous_state', 'state') == (
        audit.uuid, 0, 'migrate', vm, 'host-1', 'host-2', 'pending',
        'skipped')
