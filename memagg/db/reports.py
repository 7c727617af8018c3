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
import operator
import re

from oslo_utils import timeutils
from pymysql import cursors as pymysql_cursors
import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects import sqlite

from memagg.db import facade
from memagg.db.sqlalchemy import models

# Rows per statement: 1,000 rows of the widest table stay below every
# backend's limit on bound parameters (SQLite's 32,766 the lowest).
_BATCH = 1000


@functools.lru_cache(maxsize=None)
def _scalar_defaults(table):
    """{column: scalar default} of ``table``'s columns (the id left out)
    that have one."""
    return {c.key: c.default.arg for c in table.columns
            if c.key != 'id' and c.default is not None
            and c.default.is_scalar}


def _defaults(table, rows, now):
    """{column: value} of every column any of ``rows`` gives or that has a
    default: its scalar default, created_at ``now``, else None."""
    defaults = dict(_scalar_defaults(table), created_at=now)
    return dict(dict.fromkeys(set().union(*rows)), **defaults)


def _insert(conn, table, rows, now):
    """Insert ``rows`` into ``table`` in one statement per _BATCH rows; a
    column a row leaves out takes its scalar default, else NULL, as every
    row of one executemany must give the same columns (a column no row
    gives and without a default is left out of the statement: NULL)."""
    defaults = _defaults(table, rows, now)
    run = _executor(conn.dialect, table, tuple(sorted(defaults)), None)
    for start in range(0, len(rows), _BATCH):
        run(conn, [dict(defaults, **row)
                   for row in rows[start:start + _BATCH]])


def _update_by_id(conn, table, rows, now):
    """Write the columns of ``rows`` (id among them, every row with the
    same keys) over the rows with their ids, in one upsert executed with
    every row's parameters; the columns the rows leave out keep their
    values. A conflict on the primary key locks only that row on every
    backend, and the drivers send it as one multi-row statement per batch
    (PyMySQL and mysqlclient rewrite the executemany, SQLAlchemy's
    insertmanyvalues does for psycopg2). The insert side takes the
    columns' defaults for what the rows leave out: it is never used."""
    kept = tuple(sorted(set(rows[0]) - {'id', 'created_at'}))
    defaults = _defaults(table, rows[:1], now)
    run = _executor(conn.dialect, table, tuple(sorted(defaults)), kept)
    for start in range(0, len(rows), _BATCH):
        run(conn, [dict(defaults, **row)
                   for row in rows[start:start + _BATCH]])


@functools.lru_cache(maxsize=64)
def _executor(dialect, table, columns, kept):
    """A function(conn, rows) inserting rows of ``columns`` into ``table``
    on ``dialect``, or, with ``kept``, upserting them by id (setting the
    ``kept`` columns of a row that exists). It may change ``rows``."""
    if dialect.name not in ('mysql', 'mariadb'):
        if kept is None:
            stmt = sa.insert(table)
        else:
            stmt = {'postgresql': postgresql.insert,
                    'sqlite': sqlite.insert}[dialect.name](table)
            stmt = stmt.on_conflict_do_update(
                index_elements=['id'],
                set_={c: stmt.excluded[c] for c in kept})
        return lambda conn, rows: conn.execute(stmt, rows)
    stmt = mysql.insert(table)
    if kept is not None:
        stmt = stmt.on_duplicate_key_update(
            {c: stmt.inserted[c] for c in kept})
    # SQLAlchemy does not cache a dialect's upsert (it compiled this one at
    # every report, 0.4 ms of CPU), and its executemany processes every
    # row's parameters in Python again after the driver does. Compiled
    # once here, the statement goes to the driver as is, with the values
    # its column types convert for it.
    compiled = stmt.compile(dialect=dialect, column_keys=list(columns))
    convert = {c: proc for c in columns
               if (proc := table.c[c].type.bind_processor(dialect))}
    if dialect.driver == 'pymysql':
        return _pymysql_rows_statement(compiled, convert)
    pick = (operator.itemgetter(*compiled.positiontup)
            if compiled.positional else None)

    def run(conn, rows):
        for row in rows:
            for column, proc in convert.items():
                row[column] = proc(row[column])
        conn.exec_driver_sql(compiled.string,
                             [pick(row) for row in rows] if pick else rows)
    return run


def _pymysql_rows_statement(compiled, convert):
    """_executor's function for PyMySQL: the multi-row statement its
    executemany would send, with each distinct value of a column escaped
    once (by PyMySQL) rather than every value of every row: a batch's
    rows repeat their host, time and estimator, and PyMySQL's escaping,
    in Python, was a third of the batch's CPU."""
    prefix, values, suffix = pymysql_cursors.RE_INSERT_VALUES.match(
        compiled.string).groups()
    order = (compiled.positiontup if compiled.positional
             else re.findall(r'%\(([^)]+)\)s', values))
    template = ','.join('%s' if compiled.positional else '%%(%s)s' % c
                        for c in order)
    if values.replace(' ', '') != '(%s)' % template:
        raise ValueError('unexpected VALUES clause %r' % values)
    prefix, suffix = prefix % (), (suffix or '') % ()

    def run(conn, rows):
        escape = conn.connection.dbapi_connection.escape
        columns = []
        for column in order:
            values = [row[column] for row in rows]
            if column in convert:
                values = list(map(convert[column], values))
            # Keyed by the values themselves, so that a lookup finds each
            # (by identity first) whatever its equality.
            literals = dict.fromkeys(values)
            for value in literals:
                literals[value] = escape(value)
            columns.append(map(literals.__getitem__, values))
        conn.exec_driver_sql(
            prefix + ','.join('(%s)' % ','.join(row)
                              for row in zip(*columns)) + suffix,
            execution_options={'no_parameters': True})
    return run


def _write_instances(conn, reports, hosts, now):
    """Store the instances of ``reports`` (sorted oldest first) of the
    hosts in ``hosts`` (merged by uuid, the newer report's last) as on
    their host, and mark gone those a host's newest report leaves out, as
    storing the reports one by one would. A row that would not change is
    not written, so its updated_at keeps telling when it last changed."""
    table = models.Instance.__table__
    newest, reported = {}, {}
    for report in reports:
        name = report['host']['name']
        if name not in hosts:
            continue
        newest[name] = {values['uuid'] for values in report['instances']}
        for values in report['instances']:
            reported.setdefault(values['uuid'], {}).update(
                values, host=name, status=values.get('status', 'active'))
    if not newest:
        return
    for uuid, values in reported.items():
        if uuid not in newest[values['host']]:
            values['status'] = 'gone'
    # Only the columns the reports give are read and compared (and those
    # telling what is gone), not the whole row: pure-Python drivers parse
    # every value read.
    first = ['id', 'uuid', 'host', 'status']
    read = first + sorted(
        set().union(*reported.values()) - set(first))
    stored = conn.execute(sa.select(*(table.c[c] for c in read)).where(
        sa.or_(table.c.uuid.in_(list(reported)),
               table.c.host.in_(list(newest)))))
    stored = {row.uuid: row._asdict() for row in stored}
    new, changed = [], []
    for uuid, values in reported.items():
        old = stored.get(uuid)
        if old is None:
            new.append(values)
        elif any(old[c] != v for c, v in values.items()):
            changed.append(dict(old, **values, updated_at=now))
    gone = [row['id'] for row in stored.values()
            if row['host'] in newest and row['uuid'] not in reported
            and row['status'] != 'gone']
    if new:
        _insert(conn, table, new, now)
    if changed:
        _update_by_id(conn, table, changed, now)
    if gone:
        conn.execute(sa.update(table).where(table.c.id.in_(gone)).values(
            status='gone', updated_at=now))


def _write_newest(conn, table, key, newest, now):
    """Insert the rows of ``newest`` ({``key`` value: column values with
    reported_at}) that ``table`` lacks, and upsert (by id, as a row lock
    only) those whose stored row is not of a newer report; return the
    ``key`` values written. A redelivered or late report must not take a
    row's state back."""
    column = table.c[key]
    stored = {row[key]: row for row in (r._asdict() for r in conn.execute(
        sa.select(table).where(column.in_(list(newest)))))}
    new, changed = [], []
    for name, values in newest.items():
        old = stored.get(name)
        if old is None:
            new.append(values)
        elif (old['reported_at'] is None
              or _second(old['reported_at'])
              <= _second(values['reported_at'])):
            changed.append(dict(old, **values, updated_at=now))
    if new:
        _insert(conn, table, new, now)
    if changed:
        _update_by_id(conn, table, changed, now)
    return {values[key] for values in new + changed}


def _write_hosts(conn, reports, now):
    """Store the hosts rows of ``reports`` (sorted oldest first), each
    from its host's newest report unless the stored one is newer; return
    the names of the hosts written."""
    newest = {}
    for report in reports:
        newest[report['host']['name']] = dict(
            report['host'], reported_at=report['reported_at'])
    return _write_newest(conn, models.Host.__table__, 'name', newest, now)


def _write_ledgers(conn, reports, now):
    """Store the grants' ledgers of ``reports`` (sorted oldest first):
    each grant's newest, only from the host its grant names as consumer
    (a migrated VM's source may still report the grant), and not over a
    newer report's."""
    newest = {}
    for report in reports:
        for values in report.get('ledgers') or ():
            newest[values['grant_uuid']] = dict(
                values, host=report['host']['name'],
                reported_at=report['reported_at'])
    if not newest:
        return
    grants = models.Grant.__table__
    consumers = dict(conn.execute(sa.select(
        grants.c.uuid, grants.c.consumer_host).where(
        grants.c.uuid.in_(list(newest)))).all())
    newest = {uuid: values for uuid, values in newest.items()
              if consumers.get(uuid) == values['host']}
    if newest:
        _write_newest(conn, models.GrantLedger.__table__, 'grant_uuid',
                      newest, now)


def _second(moment):
    # MariaDB's DATETIME keeps whole seconds (it truncates the rest) and
    # reads back naive UTC: a stored sample and its redelivered copy
    # compare equal at that grain.
    return timeutils.normalize_time(moment).replace(microsecond=0)


def _insert_new_samples(conn, table, key, rows, now):
    """Insert those of ``rows`` whose (``key``, sampled_at) ``table`` does
    not hold yet, to the second, in one read and one insert: a report
    redelivered after its batch was stored (its worker died before the
    acknowledgement) stores no sample twice."""
    if not rows:
        return
    column = table.c[key]
    stored = conn.execute(sa.select(column, table.c.sampled_at).where(
        column.in_(list({row[key] for row in rows})),
        table.c.sampled_at >= _second(min(r['sampled_at'] for r in rows))))
    seen = {(value, _second(at)) for value, at in stored}
    fresh = []
    for row in rows:
        mark = (row[key], _second(row['sampled_at']))
        if mark not in seen:
            seen.add(mark)
            fresh.append(row)
    if fresh:
        _insert(conn, table, fresh, now)


def report_ingest(context, host, instances, samples, reported_at=None,
                  host_sample=None, ledgers=None):
    """Store one compute node's report: report_ingest_batch of this one.

    ``host`` is a dict of Host columns (``name`` required); ``instances`` a
    list of dicts of Instance columns (``uuid`` required) now on that host;
    ``samples`` a list of dicts of WssSample columns; ``host_sample`` a dict
    of HostSample columns (``cpu_util``, ``mem_used_mb``; ``sampled_at``
    defaults to ``reported_at``), or None; ``ledgers`` a list of dicts of
    GrantLedger columns (``grant_uuid`` and the counts), or None.
    """
    report_ingest_batch(context, [dict(
        host=host, instances=instances, samples=samples,
        reported_at=reported_at, host_sample=host_sample, ledgers=ledgers)])


@facade.retry_on_race
def report_ingest_batch(context, reports):
    """Store compute nodes' reports in one transaction.

    Each of ``reports`` is a dict of report_ingest's arguments (``host``,
    ``instances``, ``samples``, optional ``reported_at``, ``host_sample``
    and ``ledgers``). A host takes the state of its newest report in the
    batch (instances it reported before but not then are marked ``gone``),
    unless the database holds a newer report of it; every report's samples
    are stored, but none already stored (same instance, or host, and
    sampled_at, to the second): storing a batch again stores nothing twice.
    A grant's ledger is its newest report's, from its consumer host only.

    Issues at most fifteen statements whatever the number of reports,
    instances, samples and ledgers (up to _BATCH rows of each kind): the
    hosts' read, insert and upsert, the instances' read, the insert of the
    new ones, the upsert of the changed ones and the update of those gone,
    the read and the insert of the samples, and of the host samples, and,
    for reports with ledgers, the read of their grants' consumers and the
    ledgers' read, insert and upsert.
    """
    now = timeutils.utcnow()
    for report in reports:
        facade.check_columns(models.Host, report['host'], 'host')
        # Once per report: the keys of all its rows.
        facade.check_columns(models.Instance,
                             set().union(*report['instances']), 'instances')
        facade.check_columns(models.WssSample,
                             set().union(*report['samples']), 'samples')
        if report.get('host_sample') is not None:
            facade.check_columns(models.HostSample, report['host_sample'],
                                 'host_sample')
        if report.get('ledgers'):
            facade.check_columns(models.GrantLedger,
                                 set().union(*report['ledgers']), 'ledgers')
    if not reports:
        return
    reports = sorted((dict(report, reported_at=report.get('reported_at')
                           or now) for report in reports),
                     key=lambda report: report['reported_at'])
    samples, host_samples = [], []
    for report in reports:
        name = report['host']['name']
        samples.extend(dict(sample, host=name)
                       for sample in report['samples'])
        if report.get('host_sample') is not None:
            host_samples.append(dict({'sampled_at': report['reported_at']},
                                     **report['host_sample'], host=name))
    # A Connection, not an ORM Session: every statement here is Core, so
    # the Session's bookkeeping would be CPU spent on every report for
    # nothing.
    with facade.writer().connection.using(context) as conn:
        hosts = _write_hosts(conn, reports, now)
        _write_instances(conn, reports, hosts, now)
        _insert_new_samples(conn, models.WssSample.__table__,
                            'instance_uuid', samples, now)
        _insert_new_samples(conn, models.HostSample.__table__, 'host',
                            host_samples, now)
        _write_ledgers(conn, reports, now)
