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

"""Fixtures of the database tests on every backend."""
import pytest

from memagg.db import audits as db_audits
from memagg.tests.unit.db.rows import VM_A, VM_B


@pytest.fixture
def db(any_db, admin_context):
    """The admin context, on a migrated database of each backend."""
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
