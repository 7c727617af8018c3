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

"""memagg.db.grants on SQLite: a grant read with its slabs in order, and
its secret (with memagg/db/secret_box.py) stored wrapped, read back clear,
rewrapped."""
import os
import uuid

import pytest
import sqlalchemy as sa

from memagg.db import facade as db_facade
from memagg.db import grant_secrets as db_grant_secrets
from memagg.db import grants as db_grants
from memagg.db import secret_box
from memagg.db.sqlalchemy import models
from memagg.tests.unit.db import rows

SECRET = 'cd' * 32


def reserve(context, secret=SECRET):
    """A grant reserved as memagg.scheduler.reservoir reserves one."""
    instance = str(uuid.uuid4())
    rows.insert(models.Instance, dict(uuid=instance))
    return db_grants.grant_reserve(context, dict(
        uuid=str(uuid.uuid4()), instance_uuid=instance,
        consumer_host='host-1', requested_mb=64, slab_size_mb=64,
        secret=secret), rows.ago(hours=1), lambda *_: ([], 'no donor'))


def stored(grant_uuid):
    """The grants.secret column of ``grant_uuid`` as the database has it."""
    with db_facade.get_engine().connect() as connection:
        return connection.execute(sa.text(
            'select secret from grants where uuid = :uuid'),
            dict(uuid=grant_uuid)).scalar_one()


def stored_uuid(grant_id):
    """The uuid of the grant whose id is ``grant_id``."""
    with db_facade.get_engine().connect() as connection:
        return connection.execute(sa.text(
            'select uuid from grants where id = :id'),
            dict(id=grant_id)).scalar_one()


def set_stored(grant_uuid, value):
    with db_facade.get_engine().begin() as connection:
        connection.execute(sa.text(
            'update grants set secret = :value where uuid = :uuid'),
            dict(value=value, uuid=grant_uuid))


def test_a_secret_is_stored_wrapped_and_read_clear(any_db, admin_context):
    grant = reserve(admin_context)

    column = stored(grant.uuid)
    assert SECRET not in column and column.startswith('v1:')
    assert grant.secret == SECRET
    assert db_grants.grant_get(admin_context, grant.uuid).secret == SECRET
    [listed] = db_grants.grants_in_status(admin_context, ['pending'])
    assert listed.secret == SECRET


def test_no_key_file_no_grant(sqlite_db, admin_context, conf, tmp_path):
    conf.config(secret_key_file=str(tmp_path / 'absent.key'),
                group='database')

    with pytest.raises(secret_box.KeyFileError, match='does not exist'):
        reserve(admin_context)
    with db_facade.get_engine().connect() as connection:
        assert connection.execute(sa.text(
            'select count(*) from grants')).scalar() == 0


def test_a_key_file_made_too_open_stops_reads(sqlite_db, admin_context,
                                              conf):
    grant = reserve(admin_context)
    os.chmod(conf.conf.database.secret_key_file, 0o644)
    try:
        with pytest.raises(secret_box.KeyFileError, match='chmod 600'):
            db_grants.grant_get(admin_context, grant.uuid).secret
    finally:
        os.chmod(conf.conf.database.secret_key_file, 0o600)


def test_a_clear_legacy_secret_is_refused_naming_the_command(
        sqlite_db, admin_context):
    [grant_id] = rows.insert(models.Grant, dict(wrapped_secret=SECRET))
    grant_uuid = stored_uuid(grant_id)

    with pytest.raises(secret_box.ClearSecret,
                       match='run "memagg-manage grant_secrets rewrap"'):
        db_grants.grant_get(admin_context, grant_uuid).secret


def test_a_value_moved_to_another_grants_row_is_refused(sqlite_db,
                                                        admin_context):
    mine, other = reserve(admin_context), reserve(admin_context, 'ef' * 32)
    set_stored(mine.uuid, stored(other.uuid))

    with pytest.raises(secret_box.SecretUnavailable,
                       match="belongs to another grant's row"):
        db_grants.grant_get(admin_context, mine.uuid).secret


def test_an_altered_value_is_refused(sqlite_db, admin_context):
    grant = reserve(admin_context)
    value = stored(grant.uuid)
    # A different last ciphertext/tag character ('A' and 'Q' differ in
    # the high bits, which padding never hides).
    set_stored(grant.uuid, value[:-2] + ('A' if value[-2] != 'A' else 'Q')
               + value[-1])

    with pytest.raises(secret_box.SecretUnavailable, match='altered'):
        db_grants.grant_get(admin_context, grant.uuid).secret


def test_rewrap_moves_old_key_and_clear_values_to_the_current_key(
        sqlite_db, admin_context, conf, tmp_path):
    old = secret_box.current_key()
    under_old = [reserve(admin_context, '%02x' % n * 32) for n in range(5)]
    [legacy_id] = rows.insert(models.Grant, dict(wrapped_secret=SECRET))
    legacy = stored_uuid(legacy_id)
    new_path = str(tmp_path / 'new.key')
    new = secret_box.create_key_file(new_path)
    conf.config(secret_key_file=new_path, group='database')
    under_new = reserve(admin_context, 'ab' * 32)

    result = db_grant_secrets.grant_secrets_rewrap(admin_context, [old],
                                                   batch_size=2)

    assert result == dict(rewrapped=5, wrapped=1, current=1, failed=[])
    for n, grant in enumerate(under_old):
        assert secret_box.key_id_of(stored(grant.uuid)) == new.key_id
        assert db_grants.grant_get(admin_context,
                                   grant.uuid).secret == '%02x' % n * 32
    assert secret_box.key_id_of(stored(legacy)) == new.key_id
    assert db_grants.grant_get(admin_context, legacy).secret == SECRET
    assert db_grants.grant_get(admin_context,
                               under_new.uuid).secret == 'ab' * 32
    # Idempotent: a second run finds everything under the current key.
    before = {g.uuid: stored(g.uuid) for g in under_old}
    again = db_grant_secrets.grant_secrets_rewrap(admin_context, [old])
    assert again == dict(rewrapped=0, wrapped=0, current=7, failed=[])
    assert {g.uuid: stored(g.uuid) for g in under_old} == before


def test_rewrap_without_the_old_key_reports_what_it_could_not_open(
        sqlite_db, admin_context, conf, tmp_path):
    grant = reserve(admin_context)
    value = stored(grant.uuid)
    new_path = str(tmp_path / 'new.key')
    secret_box.create_key_file(new_path)
    conf.config(secret_key_file=new_path, group='database')

    result = db_grant_secrets.grant_secrets_rewrap(admin_context, [])

    assert result['rewrapped'] == result['wrapped'] == 0
    [(grant_uuid, why)] = result['failed']
    assert grant_uuid == grant.uuid and '--old-key-file' in why
    assert stored(grant.uuid) == value


def test_a_model_wraps_a_secret_set_after_its_uuid(conf):
    grant = models.Grant(uuid=str(uuid.uuid4()), secret=SECRET)

    assert secret_box.is_wrapped(grant.wrapped_secret)
    assert SECRET not in grant.wrapped_secret and grant.secret == SECRET
    with pytest.raises(ValueError, match="uuid before its secret"):
        models.Grant(secret=SECRET, uuid=str(uuid.uuid4()))


def test_grant_get_returns_its_slabs_in_order(db):
    (grant_id,) = rows.insert(models.Grant, dict(uuid='g'))
    rows.insert(models.Slab, dict(grant_id=grant_id, index=1),
                dict(grant_id=grant_id, index=0))

    grant = db_grants.grant_get(db, 'g')

    assert [s.index for s in grant.slabs] == [0, 1]
