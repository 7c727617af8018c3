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

"""Throw-away databases on the real servers the tests use.

SQLite is a file in a temporary directory; MariaDB and PostgreSQL get a fresh
database per use on the servers .ci/run starts (127.0.0.1, root / postgres,
no password; override with MEMAGG_TEST_MYSQL_URL / MEMAGG_TEST_PG_URL, which
name the server, not the database).
"""
import contextlib
import os
import shutil
import uuid

import sqlalchemy as sa

from memagg.db import facade as db_facade
from memagg.db import migration

SERVERS = {
    'mysql': os.environ.get('MEMAGG_TEST_MYSQL_URL',
                            'mysql+pymysql://root@127.0.0.1:3306'),
    'postgresql': os.environ.get(
        'MEMAGG_TEST_PG_URL', 'postgresql+psycopg2://postgres@127.0.0.1:5432'),
}


@contextlib.contextmanager
def provisioned(backend, tmp_path):
    """Yield the URL of a new empty database on ``backend``; drop it after."""
    if backend == 'sqlite':
        yield 'sqlite:///%s' % (tmp_path / 'memagg.sqlite')
        return
    server = SERVERS[backend]
    name = 'memagg_test_%s' % uuid.uuid4().hex[:12]
    admin_db = '/postgres' if backend == 'postgresql' else '/'
    admin = sa.create_engine(server + admin_db, isolation_level='AUTOCOMMIT')
    with admin.connect() as conn:
        conn.execute(sa.text('CREATE DATABASE %s' % name))
    try:
        if backend == 'mysql':
            yield '%s/%s?charset=utf8mb4' % (server, name)
        else:
            yield '%s/%s' % (server, name)
    finally:
        with admin.connect() as conn:
            if backend == 'postgresql':
                conn.execute(sa.text(
                    'SELECT pg_terminate_backend(pid) FROM pg_stat_activity '
                    'WHERE datname = :n AND pid <> pg_backend_pid()'),
                    {'n': name})
            conn.execute(sa.text('DROP DATABASE IF EXISTS %s' % name))
        admin.dispose()


@contextlib.contextmanager
def migrated(backend, conf, tmp_path, revision='head'):
    """A new database on ``backend`` migrated to ``revision`` and made
    memagg.db's through ``conf``; yield its URL.

    A SQLite file is a copy of one this process migrated once per revision
    (a tenth of a second each, for about a thousand tests)."""
    with provisioned(backend, tmp_path) as url:
        if backend == 'sqlite':
            shutil.copyfile(_sqlite_template(tmp_path, revision),
                            sa.engine.make_url(url).database)
        conf.config(connection=url, group='database')
        db_facade.dispose()
        if backend != 'sqlite':
            migration.upgrade(revision)
        yield url
        db_facade.dispose()


_SQLITE_TEMPLATES = {}


def _sqlite_template(tmp_path, revision):
    """The file of a SQLite database migrated to ``revision``, made on
    first use beside the first test's directory."""
    if revision not in _SQLITE_TEMPLATES:
        path = tmp_path.parent / ('memagg-%d-%s.sqlite'
                                  % (os.getpid(), revision))
        engine = sa.create_engine('sqlite:///%s' % path)
        try:
            migration.upgrade(revision, engine=engine)
        finally:
            engine.dispose()
        _SQLITE_TEMPLATES[revision] = path
    return _SQLITE_TEMPLATES[revision]


def seed_instance_and_sample(engine, instance_uuid, at):
    """One instance on host-1 and one WSS sample of it, written with the
    columns every revision has: a migration test's rows from before it."""
    with engine.begin() as connection:
        connection.execute(sa.text(
            "INSERT INTO instances (uuid, name, host, status, booked_mb, "
            "current_mb, wss_mb, cpu_util, remote_mb, vcpus, created_at) "
            "VALUES (:uuid, 'vm', 'host-1', 'active', 2048, 1024, 700, 0.5, "
            "0, 2, :t)"), dict(uuid=instance_uuid, t=at))
        connection.execute(sa.text(
            "INSERT INTO wss_samples (instance_uuid, host, sampled_at, "
            "wss_mb, current_mb, estimator, created_at) VALUES "
            "(:uuid, 'host-1', :t, 700, 1024, 'badis/V/sampler', :t)"),
            dict(uuid=instance_uuid, t=at))


def columns_of(engine, table, instance_uuid, names):
    """{name: value} of ``names`` in the first row of ``table`` (instances
    or wss_samples) of ``instance_uuid``, read with SQL: the ORM's models
    are the newest revision's, which a migration test may not be at."""
    key = 'uuid' if table == 'instances' else 'instance_uuid'
    with engine.connect() as connection:
        row = connection.execute(sa.text(
            'SELECT %s FROM %s WHERE %s = :uuid ORDER BY id'
            % (', '.join(names), table, key)),
            dict(uuid=instance_uuid)).first()
    return dict(zip(names, row))
