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

"""Notifications of grants: their status, never their secret."""
import uuid

from memagg.db import grants as db_grants
from memagg.db.sqlalchemy import models
from memagg.tests.unit.db import rows
from memagg.tests.unit.notifications.sent import data


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
    assert [data(p, 'uuid', 'previous_state', 'status', 'granted_mb',
                 'reason') for _, p in changes] == [
        (grant_uuid, 'active', 'releasing', 256, None),
        (grant_uuid, 'releasing', 'failed', 256, 'host-2 never answered')]
    assert all('secret' not in p['memagg_object.data'] for _, p in changes)
