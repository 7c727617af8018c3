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
import threading

import pytest
import sqlalchemy as sa

from memagg.common import context as memagg_context
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


def test_a_thread_configuring_holds_back_the_others(sqlite_db, monkeypatch):
    """The interleaving of a rehearsal's failure (AlreadyStartedError in
    test_concurrent_first_heartbeats_make_one_row[sqlite]): thread B is
    between the configured check and enginefacade's configure() while
    thread A configures and starts a transaction. A waits for B instead;
    enginefacade is configured once and neither fails."""
    db_facade.dispose()
    b_inside, b_go = threading.Event(), threading.Event()
    a_done = threading.Event()
    private_file = db_facade._private_sqlite_file
    calls, errors = [], []

    def held_first(connection):
        calls.append(threading.current_thread().name)
        if len(calls) == 1:
            b_inside.set()
            assert b_go.wait(30)
        private_file(connection)

    def run(name, done=None):
        def body():
            try:
                with db_facade.writer().using(
                        memagg_context.get_admin_context()) as session:
                    session.execute(sa.text('select 1'))
            except Exception as error:
                errors.append((name, error))
            finally:
                if done is not None:
                    done.set()
        return threading.Thread(target=body, name=name)

    monkeypatch.setattr(db_facade, '_private_sqlite_file', held_first)
    b, a = run('B'), run('A', a_done)
    b.start()
    assert b_inside.wait(30)
    a.start()
    # A may not finish while B holds the configuration: give it the time
    # it would need to (it needs milliseconds when nothing holds it).
    finished_early = a_done.wait(0.5)
    b_go.set()
    b.join(30)
    a.join(30)
    assert not (b.is_alive() or a.is_alive())
    assert errors == [] and not finished_early and calls == ['B']
