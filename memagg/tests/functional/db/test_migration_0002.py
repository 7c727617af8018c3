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

"""Migration 0002 (consolidation rounds) and those after it on a database
that already holds rows: existing instances and audits get the new columns'
defaults, on SQLite, MariaDB and PostgreSQL."""
import datetime

import pytest
import sqlalchemy as sa

from memagg.common import context
from memagg.db import audits as db_audits
from memagg.db import facade as db_facade
from memagg.db import instances as db_instances
from memagg.db import migration
from memagg.tests import db_backends

pytestmark = pytest.mark.functional

T0 = datetime.datetime(2024, 5, 1, 12, 0, 0)
UUID = '11111111-1111-4111-8111-111111111111'
AUDIT = '44444444-4444-4444-8444-444444444444'


@pytest.fixture(params=['sqlite', 'mysql', 'postgresql'])
def db_at_0001(request, conf, tmp_path):
    with db_backends.migrated(request.param, conf, tmp_path, '0001'):
        yield db_facade.get_engine()


def test_rows_written_before_0002_read_back_after_it(db_at_0001):
    with db_at_0001.begin() as connection:
        connection.execute(sa.text(
            "INSERT INTO instances (uuid, name, host, status, booked_mb, "
            "current_mb, cpu_util, remote_mb, created_at) VALUES "
            "(:uuid, 'vm', 'host-1', 'active', 2048, 1024, 0.5, 0, :t)"),
            dict(uuid=UUID, t=T0))
        connection.execute(sa.text(
            "INSERT INTO audits (uuid, state, memory_basis, created_at) "
            "VALUES (:uuid, 'succeeded', 'wss', :t)"),
            dict(uuid=AUDIT, t=T0))

    # Through 0002 and every later migration: the rows are read back with
    # today's models, which need the newest schema.
    migration.upgrade()

    ctxt = context.get_admin_context()
    instance = db_instances.instance_get(ctxt, UUID)
    assert (instance.vcpus, instance.local_policy) == (0, None)
    audit = db_audits.audit_get(ctxt, AUDIT)
    assert (audit.auto_execute, audit.unplaced) == (False, None)
    assert 'host_samples' in sa.inspect(db_at_0001).get_table_names()
