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

"""Shared pytest fixtures: configuration and migrated databases."""
import os

from futurist import _thread as futurist_thread
from oslo_config import fixture as config_fixture
import pytest

from memagg.common import context as memagg_context
from memagg.conf import CONF
from memagg.tests import db_backends
from memagg.tests import grant_key

# Nova's harness needs an interpreter of its own (see
# memagg/tests/nova_functional/__init__.py); that run sets this variable.
if not os.environ.get('MEMAGG_NOVA_FUNCTIONAL'):
    collect_ignore = ['nova_functional']

# A stopped RPC server's idle worker (oslo.messaging's threading executor is
# futurist's pool) sees the stop only when its wait on the work queue times
# out, MAX_IDLE_FOR (1 s): a second per service stopped in this process, a
# third of the unit tier's teardown time. Shorter here; the stop is the same.
futurist_thread.ThreadWorker.MAX_IDLE_FOR = 0.05


@pytest.fixture(autouse=True)
def conf():
    """memagg's CONF, parsed with no files; overrides undone after the test."""
    fixture = config_fixture.Config(CONF)
    fixture.setUp()
    CONF([], project='memagg', default_config_files=[])
    fixture.config(secret_key_file=grant_key.path(), group='database')
    yield fixture
    fixture.cleanUp()


@pytest.fixture
def sqlite_db(conf, tmp_path):
    """A migrated SQLite database that memagg.db now uses; its URL."""
    with db_backends.migrated('sqlite', conf, tmp_path) as url:
        yield url


@pytest.fixture
def mysql_db(conf, tmp_path):
    """A migrated database on the real MariaDB server; its URL."""
    with db_backends.migrated('mysql', conf, tmp_path) as url:
        yield url


@pytest.fixture
def postgresql_db(conf, tmp_path):
    """A migrated database on the real PostgreSQL server; its URL."""
    with db_backends.migrated('postgresql', conf, tmp_path) as url:
        yield url


@pytest.fixture(params=['sqlite', 'mysql', 'postgresql'])
def any_db(request, conf, tmp_path):
    """Each of the three backends in turn, migrated; its URL."""
    with db_backends.migrated(request.param, conf, tmp_path) as url:
        yield url


@pytest.fixture
def admin_context():
    return memagg_context.get_admin_context()
