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

"""The engine facade (memagg/db/facade.py): the SQLite file it opens is its
owner's only."""
import os
import stat

import pytest
import sqlalchemy as sa

from memagg.db import facade as db_facade
from memagg.db import migration


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


@pytest.mark.parametrize('existing', [None, 0o644])
def test_a_sqlite_file_with_grant_secrets_is_0600(conf, tmp_path,
                                                  umask_022, existing):
    """memagg-aio's database was created 0644 under a usual umask, every
    grant's secret in it; one left so by an older memagg is tightened."""
    path = tmp_path / 'memagg.sqlite'
    if existing is not None:
        path.touch(mode=existing)
        os.chmod(path, existing)
    conf.config(connection='sqlite:///%s' % path, group='database')
    db_facade.dispose()
    try:
        migration.upgrade('head')
        with db_facade.get_engine().connect() as connection:
            assert connection.execute(sa.text(
                'select count(*) from grants')).scalar() == 0
    finally:
        db_facade.dispose()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
