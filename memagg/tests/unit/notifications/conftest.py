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

"""Fixtures of the notification tests: oslo.messaging's ``test``
notification driver behind memagg's notifier."""
import oslo_messaging as messaging
from oslo_messaging.notify import _impl_test
import pytest

from memagg.common import rpc
from memagg.tests.unit.notifications import sent


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
    yield sent.Sent()
    rpc.cleanup()
