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

"""memagg's database engine and transactions, and the helpers the resource
modules (memagg.db.hosts, .instances, .grants, ...) share.

Resource functions take a RequestContext first (enginefacade keeps the session
on it) and return model objects detached from the session, or raise
memagg.common.exceptions.
"""
import functools
import os
import threading

from oslo_db import api as oslo_db_api
from oslo_db import exception as db_exc
from oslo_db.sqlalchemy import enginefacade
from oslo_utils import timeutils
import sqlalchemy as sa

from memagg.common import exceptions
from memagg.conf import CONF
from memagg.conf import database as database_conf


_context_manager = enginefacade.transaction_context()
_configured = False
# Threads of a service make their first database call at once; enginefacade
# refuses a configure() once another thread's transaction has started it.
_configure_lock = threading.Lock()
_MEMAGG_OPTIONS = frozenset(opt.dest for opt in database_conf.memagg_opts)


def _sqlite_file(connection):
    """The path of the file a SQLite URL names; None for another backend,
    an in-memory or URI database, or a URL that does not parse (oslo.db
    names it when it connects)."""
    if not connection:
        return None
    try:
        url = sa.engine.make_url(connection)
    except sa.exc.ArgumentError:
        return None
    path = url.database
    if (url.get_backend_name() != 'sqlite' or not path
            or path == ':memory:' or path.startswith('file:')):
        return None
    return path


def _private_sqlite_file(connection):
    """Make a SQLite database file readable by its owner only: SQLite
    creates it with the process's umask (0644 with most), and it holds
    every grant's secret. One this process does not own is left as the
    operator made it."""
    path = _sqlite_file(connection)
    if path is None:
        return
    try:
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC,
                         0o600))
        if os.stat(path).st_uid == os.getuid():
            os.chmod(path, 0o600)
    except OSError:
        return  # the connect says why the file cannot be used


def absent_sqlite_file():
    """The path of the SQLite file [database] connection names when it
    does not exist (connecting would create it), else None."""
    path = _sqlite_file(CONF.database.connection)
    return path if path is not None and not os.path.exists(path) else None


def shown_url():
    """[database] connection as an operator may be shown it: password
    hidden."""
    try:
        return sa.engine.make_url(CONF.database.connection).render_as_string(
            hide_password=True)
    except sa.exc.ArgumentError:
        return '(unparsable URL)'


def configure():
    """Point the engine facade at [database], once per process: of threads
    calling at once, one configures and the others return when it has."""
    global _configured
    if _configured:
        return
    with _configure_lock:
        if not _configured:
            _private_sqlite_file(CONF.database.connection)
            # memagg's own [database] options are not oslo.db's to take.
            _context_manager.configure(**{
                name: value for name, value in CONF.database.items()
                if name not in _MEMAGG_OPTIONS})
            _configured = True


def get_engine():
    """The writer engine (migrations, tests)."""
    configure()
    return _context_manager.writer.get_engine()


def dispose():
    """Close the engine's connections and drop the engine facade, so the
    next call builds a new one on the [database] options then in force."""
    global _context_manager, _configured
    with _configure_lock:
        if _configured:
            _context_manager.dispose_pool()
        _context_manager = enginefacade.transaction_context()
        _configured = False


def reader():
    """The engine facade's reader, to open a transaction on a context."""
    configure()
    return _context_manager.reader


def writer():
    """The engine facade's writer, to open a transaction on a context."""
    configure()
    return _context_manager.writer


def _lost_race(error):
    """Whether a write failed only because a concurrent one went first."""
    if isinstance(error, db_exc.DBDuplicateEntry):
        return True
    # SQLite (all-in-one mode) fails at once, rather than wait, when two
    # transactions that both read want to write; the loser can start again.
    error = getattr(error, 'inner_exception', None) or error
    return (isinstance(error, sa.exc.OperationalError)
            and 'database is locked' in str(error))


def retry_on_race(func):
    """Run ``func``'s transaction again when it lost a race with a
    concurrent writer or the backend broke a deadlock."""
    return oslo_db_api.wrap_db_retry(
        max_retries=5, retry_interval=0.05, retry_on_deadlock=True,
        exception_checker=_lost_race)(func)


@functools.lru_cache(maxsize=None)
def _column_keys(model):
    # check_columns runs for each VM of every compute report.
    return frozenset(model.__table__.columns.keys())


def check_columns(model, values, field):
    """Raise InvalidParameter naming ``field`` when ``values`` has a key
    that is not a column of ``model``."""
    unknown = sorted(set(values) - _column_keys(model))
    if unknown:
        raise exceptions.InvalidParameter(
            field=field, reason='unknown column(s) %s of %s'
            % (', '.join(unknown), model.__tablename__))


def get_one(context, model, column, value, resource):
    """The row of ``model`` whose ``column`` is ``value``; NotFound naming
    ``resource`` when there is none."""
    with reader().using(context) as session:
        row = session.query(model).filter(
            getattr(model, column) == value).first()
        if row is None:
            raise exceptions.NotFound(resource=resource, id=value)
        return row


def compare_and_set(session, model, resource, key, state, expected, new):
    """Move the ``model`` row whose ``key`` column matches from ``state``
    column value ``expected`` to ``new`` in one conditional UPDATE: of
    concurrent callers, one only wins (a locking read would not do on
    SQLite, which takes no row locks). Returns ``(won, row)``, the row as
    it is after the statement; NotFound naming ``resource`` when there is
    no such row."""
    column, value = key
    won = session.execute(
        sa.update(model).where(
            getattr(model, column) == value,
            getattr(model, state) == expected).values(
            {state: new, 'updated_at': timeutils.utcnow()})
        .execution_options(synchronize_session=False)).rowcount == 1
    row = session.query(model).filter(
        getattr(model, column) == value).populate_existing().first()
    if row is None:
        raise exceptions.NotFound(resource=resource, id=value)
    return won, row


def locked(session, model, resource, row_id):
    """Row ``row_id`` of ``model``, locked until the transaction ends;
    NotFound naming ``resource`` when it is gone."""
    row = session.query(model).filter_by(id=row_id).with_for_update().first()
    if row is None:
        raise exceptions.NotFound(resource=resource, id=row_id)
    return row


def describe_error(error):
    """One line for an operator about a failed database call: which
    database (password hidden), the driver's reason, and where to fix it."""
    # The driver's message can go on with the SQL and its parameters; its
    # first line names the cause.
    reason = (str(error).strip().splitlines() or [type(error).__name__])[0]
    return ('database %s failed: %s; check [database] connection and that '
            'the server is running' % (shown_url(), reason))
