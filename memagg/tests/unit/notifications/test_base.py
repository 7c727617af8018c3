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

"""Sending a notification: a failure to send fails nothing, and with no
driver there is no notifier."""
import oslo_messaging as messaging

from memagg.common import rpc
from memagg.db import audits as db_audits


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
