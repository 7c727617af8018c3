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

"""Schema migrations of memagg's database (alembic), for memagg-manage."""
import os

from alembic import command as alembic_command
from alembic import config as alembic_config
from alembic import migration as alembic_migration
from alembic import script as alembic_script

from memagg.db import facade

_INI = os.path.join(os.path.dirname(__file__), 'sqlalchemy', 'alembic.ini')


def _config(connection=None):
    config = alembic_config.Config(_INI)
    config.attributes['connection'] = connection
    return config


def upgrade(revision='head', engine=None):
    """Migrate the database up to ``revision``."""
    engine = engine or facade.get_engine()
    with engine.begin() as connection:
        alembic_command.upgrade(_config(connection), revision)


class NotSetUp(Exception):
    """The database memagg would use holds no memagg schema."""


def version(engine=None):
    """The revision the database is at, or None when it has no schema. A
    SQLite file that does not exist has none, and is not created."""
    if engine is None and facade.absent_sqlite_file():
        return None
    engine = engine or facade.get_engine()
    with engine.connect() as connection:
        return alembic_migration.MigrationContext.configure(
            connection).get_current_revision()


def require_schema():
    """The revision the database is at; NotSetUp, naming the database and
    what sets it up, when it has no memagg schema."""
    current = version()
    if current is not None:
        return current
    absent = facade.absent_sqlite_file()
    raise NotSetUp('no memagg database at %s ([database] connection): %s; '
                   'run "memagg-manage db upgrade" to set it up' % (
                       facade.shown_url(),
                       'the file does not exist' if absent
                       else 'it has no memagg schema'))


def head():
    """The newest revision this code knows."""
    scripts = alembic_script.ScriptDirectory.from_config(_config())
    return scripts.get_current_head()
