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

"""The alembic migrations on SQLite, MariaDB and PostgreSQL (real servers):
they run up from an empty database and leave exactly the models' schema."""
from alembic import autogenerate
from alembic import migration as alembic_migration
import pytest
import sqlalchemy as sa

from memagg.db import facade as db_facade
from memagg.db import migration
from memagg.db.sqlalchemy import models
from memagg.tests import db_backends

pytestmark = pytest.mark.functional

BACKENDS = ['sqlite', 'mysql', 'postgresql']


def schema_diff(engine, metadata):
    """What alembic would have to change to turn the database into
    ``metadata``: tables, columns, types, nullability, defaults, indexes,
    unique and foreign keys. Empty when they match."""
    with engine.connect() as connection:
        context = alembic_migration.MigrationContext.configure(
            connection, opts={'compare_type': True,
                              'compare_server_default': True})
        return autogenerate.compare_metadata(context, metadata)


@pytest.fixture(params=BACKENDS)
def empty_db(request, conf, tmp_path):
    """An empty database on each backend, which memagg.db now uses."""
    with db_backends.provisioned(request.param, tmp_path) as url:
        conf.config(connection=url, group='database')
        db_facade.dispose()
        yield db_facade.get_engine()
        db_facade.dispose()


def test_version_is_none_on_empty_database(empty_db):
    assert migration.version() is None


def test_upgrade_from_empty_reaches_head(empty_db):
    migration.upgrade()

    assert migration.version() == migration.head()
    tables = set(sa.inspect(empty_db).get_table_names())
    assert set(models.Base.metadata.tables) <= tables


def test_models_match_migrations(empty_db):
    migration.upgrade()

    assert schema_diff(empty_db, models.Base.metadata) == []


def test_upgrade_at_head_changes_nothing(empty_db):
    migration.upgrade()
    migration.upgrade()

    assert migration.version() == migration.head()
    assert schema_diff(empty_db, models.Base.metadata) == []


def test_upgrade_to_named_revision(empty_db):
    migration.upgrade('0001')

    assert migration.version() == '0001'


def test_schema_diff_sees_a_column_the_migrations_lack(sqlite_db):
    """The check above can fail: a model column no migration creates shows."""
    metadata = sa.MetaData()
    for table in models.Base.metadata.tables.values():
        table.to_metadata(metadata)
    sa.Table('hosts', metadata, sa.Column('rack', sa.String(64)),
             extend_existing=True)

    diff = schema_diff(db_facade.get_engine(), metadata)

    assert [(op[0], op[2], op[3].name) for op in diff] == [
        ('add_column', 'hosts', 'rack')]
