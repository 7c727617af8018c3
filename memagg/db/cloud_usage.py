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

"""The cloud's memory over time, from the stored WSS samples: per time
bucket and host, what its instances booked and kept in RAM (GET
/v1/cloud_usage).

Aggregated in the database, one query whatever the number of samples:
the samples of a range can be millions, the answer is a few thousand rows
(buckets times hosts).
"""
import calendar

import sqlalchemy as sa
from sqlalchemy.ext import compiler
from sqlalchemy.sql import expression

from memagg.db import facade
from memagg.db.sqlalchemy import models


class _Bucket(expression.ColumnElement):
    """The whole number of ``step`` seconds from ``start`` to ``column``
    (a naive UTC DateTime at or after ``start``): each backend counts
    seconds between two times its own way."""

    inherit_cache = False
    type = sa.Integer()

    def __init__(self, column, start, step):
        self.column = column
        self.start = start
        self.step = int(step)


@compiler.compiles(_Bucket, 'sqlite')
def _bucket_sqlite(element, compiler_, **kw):
    # Integers on both sides: SQLite's division is then whole.
    return "((CAST(strftime('%%s', %s) AS INTEGER) - %d) / %d)" % (
        compiler_.process(element.column, **kw),
        calendar.timegm(element.start.timetuple()), element.step)


@compiler.compiles(_Bucket, 'mysql')
def _bucket_mysql(element, compiler_, **kw):
    # TIMESTAMPDIFF, not UNIX_TIMESTAMP: the latter reads a DATETIME in
    # the session's time zone, and memagg stores naive UTC.
    return "(TIMESTAMPDIFF(SECOND, %s, %s) DIV %d)" % (
        compiler_.process(sa.literal(element.start), **kw),
        compiler_.process(element.column, **kw), element.step)


@compiler.compiles(_Bucket, 'postgresql')
def _bucket_postgresql(element, compiler_, **kw):
    return "CAST(FLOOR(EXTRACT(EPOCH FROM (%s - %s)) / %d) AS INTEGER)" % (
        compiler_.process(element.column, **kw),
        compiler_.process(sa.literal(element.start), **kw), element.step)


def usage_by_bucket(context, since, until, step):
    """Rows of ``(bucket, host, booked_mb, wss_maxavg_mb)`` for the WSS
    samples taken in [``since``, ``until``] (naive UTC datetimes): bucket
    n holds the samples of [since + n * step, since + (n + 1) * step)
    seconds; per bucket and host, the booked memory of the instances
    sampled there and the sum of each one's largest WSS^maxavg (else
    WSS) in the bucket. Ordered by bucket, then host."""
    sample = models.WssSample
    inst = models.Instance
    bucket = _Bucket(sample.sampled_at, since, step)
    wss = sa.func.max(sa.func.coalesce(sample.wss_maxavg_mb, sample.wss_mb))
    # Grouped by its label: the expression's bound start would be a second
    # parameter, which PostgreSQL does not see as the same expression.
    per_instance = sa.select(
        bucket.label('bucket'), sample.host.label('host'),
        sample.instance_uuid.label('uuid'), wss.label('wss')).where(
        sample.sampled_at >= since, sample.sampled_at <= until).group_by(
        sa.text('bucket'), sample.host, sample.instance_uuid).subquery()
    query = sa.select(
        per_instance.c.bucket, per_instance.c.host,
        sa.func.sum(inst.booked_mb), sa.func.sum(per_instance.c.wss),
    ).join(inst, inst.uuid == per_instance.c.uuid).group_by(
        per_instance.c.bucket, per_instance.c.host).order_by(
        per_instance.c.bucket, per_instance.c.host)
    with facade.reader().using(context) as session:
        return [(int(b), host, int(booked or 0), int(wss or 0))
                for b, host, booked, wss in session.execute(query)]


def host_capacities(context):
    """Memory each host offers its instances (physical less reserved),
    MiB, by host name."""
    host = models.Host
    with facade.reader().using(context) as session:
        return {name: memory - reserved for name, memory, reserved in
                session.execute(sa.select(host.name, host.memory_mb,
                                          host.reserved_mb))}
