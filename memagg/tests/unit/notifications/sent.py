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

"""The notifications the tests' ``test`` driver holds, read the way the
tests check them."""
import uuid

from oslo_messaging.notify import _impl_test

from memagg.db.sqlalchemy import models
from memagg.tests.unit.db import rows


class Sent:
    """What the ``test`` notification driver holds."""

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


def data(payload, *names):
    """The named fields of a notification's versioned object."""
    return tuple(payload['memagg_object.data'].get(n) for n in names)


def instance():
    """A VM in the database (a migration is asked for a known one)."""
    vm = str(uuid.uuid4())
    rows.insert(models.Instance, dict(uuid=vm))
    return vm
