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

"""memagg.wsgi.api:application, what uWSGI (memagg-api) or mod_wsgi loads."""
import importlib
import sys

import pytest

from memagg.conf import CONF
from memagg.tests.unit.api import conftest


@pytest.fixture
def fresh_import(monkeypatch):
    """Import memagg.wsgi.api as a fresh WSGI worker does: nothing parsed
    yet; returns its ``application``."""
    library_default = CONF.database.max_retries

    def load():
        CONF.clear()
        monkeypatch.delitem(sys.modules, 'memagg.wsgi.api', raising=False)
        return importlib.import_module('memagg.wsgi.api').application
    yield load
    # set_default outlives the conf fixture; other tests expect oslo.db's.
    CONF.set_default('max_retries', library_default, group='database')


def test_application_reads_config_files_named(monkeypatch, tmp_path,
                                              sqlite_db, fresh_import):
    config = tmp_path / 'memagg.conf'
    config.write_text('[api]\nauth_strategy = noauth\nmax_limit = 7\n'
                      '[database]\nconnection = %s\n' % sqlite_db)
    monkeypatch.setenv('MEMAGG_CONFIG_FILES', str(config))
    monkeypatch.delenv('MEMAGG_CONFIG_DIRS', raising=False)
    client = conftest.Client(fresh_import())
    assert CONF.api.max_limit == 7
    # Requests fail fast rather than wait out oslo.db's retry loop.
    assert CONF.database.max_retries == 0
    assert client.get('/v1/hosts?limit=7').status_code == 200
    assert client.get('/v1/hosts?limit=8').status_code == 400


def test_config_dirs_come_after_config_files(monkeypatch, tmp_path,
                                             sqlite_db, fresh_import):
    first = tmp_path / 'memagg.conf'
    first.write_text('[api]\nauth_strategy = noauth\nmax_limit = 7\n'
                     '[database]\nconnection = %s\n' % sqlite_db)
    extra = tmp_path / 'memagg.conf.d'
    extra.mkdir()
    (extra / '10-limit.conf').write_text('[api]\nmax_limit = 9\n')
    monkeypatch.setenv('MEMAGG_CONFIG_FILES', str(first))
    monkeypatch.setenv('MEMAGG_CONFIG_DIRS', str(extra))
    client = conftest.Client(fresh_import())
    assert CONF.api.max_limit == 9
    assert client.get('/v1/hosts?limit=9').status_code == 200
    assert client.get('/v1/hosts?limit=10').status_code == 400
