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

"""Ingestion of memagg-compute reports: a host, its instances and their samples
in one transaction, with a number of statements that does not grow with the
report.

Every compute node reports each collect_interval, so the scheduler ingests
about 100 reports/s per 1,000 nodes: the instances are read in one query,
and written in at most three statements (the new ones inserted, the changed
ones upserted by primary key, those gone marked), and the samples in one
bulk insert, rather than a round trip per VM. As before, rows are read
without locks and existing rows written by primary key: on MariaDB a range
update (of a host's instances, say) or an upsert on the uuid would lock
index gaps that concurrent reports insert into, and deadlock with them.
"""
import functools

from oslo_utils import timeutils
import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects import sqlite

from memagg.db import facade
from memagg.db.sqlalchemy import models

# Rows per statement: 1,000 rows of the widest table stay below every
# backend's limit on bound parameters (SQLite's 32,766 the lowest).
_BATCH = 1000


def _insert(conn, table, rows, now):
    """Insert ``rows`` into ``table`` in one executemany per _BATCH rows; a
    column a row leaves out takes its scalar default (else NULL), as every
    row of one executemany must give the same columns."""
    defaults = {c.key: (c.default.arg if c.default is not None
                        and c.default.is_scalar else None)
                for c in table.columns if c.key != 'id'}
    defaults.update(created_at=now, updated_at=None)
    for start in range(0, len(rows), _BATCH):
        conn.execute(sa.insert(table), [
            dict(defaults, **row) for row in rows[start:start + _BATCH]])


def _update_by_id(conn, table, rows):
    """Write ``rows`` (every column of rows already in ``table``) over the
    rows with their ids, in one upsert executed with every row's
    parameters: a conflict on the primary key locks only that row on every
    backend, and the drivers send it as one multi-row statement per batch
    (PyMySQL and mysqlclient rewrite the executemany, SQLAlchemy's
    insertmanyvalues does for psycopg2)."""
    upsert = _upsert_by_id(conn.dialect, table, tuple(rows[0]))
    for start in range(0, len(rows), _BATCH):
        upsert(conn, rows[start:start + _BATCH])


@functools.lru_cache(maxsize=32)
def _upsert_by_id(dialect, table, columns):
    """A function(conn, rows) running _update_by_id's upsert of rows of
    ``columns`` (id among them; created_at is kept) on ``dialect``."""
    kept = [c for c in columns if c not in ('id', 'created_at')]
    if dialect.name not in ('mysql', 'mariadb'):
        stmt = {'postgresql': postgresql.insert, 'sqlite': sqlite.insert}[
            dialect.name](table)
        stmt = stmt.on_conflict_do_update(
            index_elements=['id'], set_={c: stmt.excluded[c] for c in kept})
        return lambda conn, rows: conn.execute(stmt, rows)
    stmt = mysql.insert(table)
    stmt = stmt.on_duplicate_key_update({c: stmt.inserted[c] for c in kept})
    # SQLAlchemy does not cache a dialect's upsert: it compiled this one at
    # every report, 0.4 ms of CPU. Compiled once here, it goes to the
    # driver as is, with the values its column types convert for it.
    compiled = stmt.compile(dialect=dialect, column_keys=list(columns))
    convert = {c: proc for c in columns
               if (proc := table.c[c].type.bind_processor(dialect))}

    def upsert(conn, rows):
        params = []
        for row in rows:
            row = dict(row, **{c: proc(row[c]) for c, proc in convert.items()})
            params.append(tuple(row[k] for k in compiled.positiontup)
                          if compiled.positional else row)
        conn.exec_driver_sql(compiled.string, params)
    return upsert


def _write_instances(conn, host_name, instances, now):
    """Store the report's ``instances`` (merged by uuid) as on
    ``host_name``, and mark gone those the host reported before but not
    now. A row that would not change is not written, so its updated_at
    keeps telling when it last changed."""
    table = models.Instance.__table__
    reported = {}
    for values in instances:
        reported.setdefault(values['uuid'], {}).update(
            values, host=host_name, status=values.get('status', 'active'))
    stored = conn.execute(sa.select(table).where(sa.or_(
        table.c.uuid.in_(list(reported)), table.c.host == host_name)))
    stored = {row.uuid: row._asdict() for row in stored}
    new, changed = [], []
    for uuid, values in reported.items():
        old = stored.get(uuid)
        if old is None:
            new.append(values)
        elif any(old[c] != v for c, v in values.items()):
            changed.append(dict(old, **values, updated_at=now))
    gone = [row['id'] for row in stored.values()
            if row['host'] == host_name and row['uuid'] not in reported
            and row['status'] != 'gone']
    if new:
        _insert(conn, table, new, now)
    if changed:
        _update_by_id(conn, table, changed)
    if gone:
        conn.execute(sa.update(table).where(table.c.id.in_(gone)).values(
            status='gone', updated_at=now))


def _write_host(conn, values, now):
    """Insert or update (by id, as a row lock only) the hosts row named
    ``values['name']``."""
    table = models.Host.__table__
    host_id = conn.execute(sa.select(table.c.id).where(
        table.c.name == values['name'])).scalar()
    if host_id is None:
        _insert(conn, table, [values], now)
    else:
        conn.execute(sa.update(table).where(table.c.id == host_id).values(
            dict(values, updated_at=now)))


@facade.retry_on_race
def report_ingest(context, host, instances, samples, reported_at=None,
                  host_sample=None):
    """Store one compute node's report in one transaction.

    ``host`` is a dict of Host columns (``name`` required); ``instances`` a
    list of dicts of Instance columns (``uuid`` required) now on that host;
    ``samples`` a list of dicts of WssSample columns; ``host_sample`` a dict
    of HostSample columns (``cpu_util``, ``mem_used_mb``; ``sampled_at``
    defaults to ``reported_at``), or None. Instances the host reported
    before but not now are marked ``gone``.

    Issues at most eight statements whatever the number of instances and
    samples (up to _BATCH of each): the host's read and its insert or
    update, the instances' read, the insert of the new ones, the upsert of
    the changed ones and the update of those gone, the samples' insert and
    the host sample's.
    """
    facade.check_columns(models.Host, host, 'host')
    for values in instances:
        facade.check_columns(models.Instance, values, 'instances')
    for sample in samples:
        facade.check_columns(models.WssSample, sample, 'samples')
    if host_sample is not None:
        facade.check_columns(models.HostSample, host_sample, 'host_sample')
    reported_at = reported_at or timeutils.utcnow()
    now = timeutils.utcnow()
    name = host['name']
    # A Connection, not an ORM Session: every statement here is Core, so
    # the Session's bookkeeping would be CPU spent on every report for
    # nothing.
    with facade.writer().connection.using(context) as conn:
        _write_host(conn, dict(host, reported_at=reported_at), now)
        _write_instances(conn, name, instances, now)
        if samples:
            _insert(conn, models.WssSample.__table__,
                    [dict(sample, host=name) for sample in samples], now)
        if host_sample is not None:
            _insert(conn, models.HostSample.__table__, [dict(
                {'sampled_at': reported_at}, **host_sample, host=name)],
                now)
