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

"""Grant secrets on SQLite, MariaDB and PostgreSQL (real servers): stored
wrapped and read back clear; a clear one stored before migration 0009
widened the column is wrapped by the rewrap and reads back."""
import datetime
import uuid

import pytest
import sqlalchemy as sa

from memagg.db import facade as db_facade
from memagg.db import grant_secrets as db_grant_secrets
from memagg.db import grants as db_grants
from memagg.db import migration
from memagg.db import secret_box
from memagg.tests import db_backends
from memagg.tests.unit.db import test_grants

pytestmark = pytest.mark.functional

SECRET = '5a' * 32
T0 = datetime.datetime(2024, 5, 1, 12, 0, 0)


def test_a_secret_round_trips_wrapped(any_db, admin_context):
    grant = test_grants.reserve(admin_context, SECRET)

    column = test_grants.stored(grant.uuid)
    assert SECRET not in column
    assert secret_box.key_id_of(column) == secret_box.current_key().key_id
    assert db_grants.grant_get(admin_context, grant.uuid).secret == SECRET


@pytest.fixture(params=['sqlite', 'mysql', 'postgresql'])
def db_at_0008(request, conf, tmp_path):
    with db_backends.migrated(request.param, conf, tmp_path, '0008'):
        yield db_facade.get_engine()


def test_a_clear_secret_from_before_0009_is_wrapped_by_the_rewrap(
        db_at_0008, admin_context):
    grant_uuid = str(uuid.uuid4())
    with db_at_0008.begin() as connection:
        connection.execute(sa.text(
            'insert into grants (uuid, instance_uuid, consumer_host, '
            'requested_mb, granted_mb, status, secret, created_at) values '
            "(:uuid, :uuid, 'host-1', 64, 64, 'active', :secret, :at)"),
            dict(uuid=grant_uuid, secret=SECRET, at=T0))

    migration.upgrade('head')
    result = db_grant_secrets.grant_secrets_rewrap(admin_context, [])

    assert result == dict(rewrapped=0, wrapped=1, current=0, failed=[])
    column = test_grants.stored(grant_uuid)
    assert len(column) > 128 and SECRET not in column
    assert db_grants.grant_get(admin_context, grant_uuid).secret == SECRET
    assert db_grant_secrets.grant_secret_key_ids(admin_context) == {
        secret_box.current_key().key_id: 1}
