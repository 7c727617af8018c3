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

"""The queries report ingestion sends to MariaDB, counted at the driver.

test_api's round-trip count sees the statements SQLAlchemy hands over; on
MySQL the bulk ones are executemany calls that PyMySQL must rewrite into one
multi-row query each, which only the driver's own queries show.
"""
import pymysql.cursors

from memagg.db import reports as db_reports
from memagg.tests.unit.db import rows


def _count_queries(monkeypatch):
    """The list the queries PyMySQL sends from now on go to, as their
    first three words."""
    queries = []
    execute = pymysql.cursors.Cursor.execute

    def counted(cursor, query, args=None):
        # A query PyMySQL rewrote from an executemany is bytes.
        if isinstance(query, (bytes, bytearray)):
            query = query.decode()
        queries.append(query.split(None, 3)[:3])
        return execute(cursor, query, args)

    monkeypatch.setattr(pymysql.cursors.Cursor, 'execute', counted)
    return queries


def _report(size, wss_mb, prefix=0):
    uuids = ['00000000-0000-%04d-%04d-%012d' % (prefix, size, i)
             for i in range(size)]
    instances = [dict(uuid=u, booked_mb=1024, current_mb=1024, wss_mb=wss_mb)
                 for u in uuids]
    # Each call a later period: a sample stored already (to the second)
    # is not stored again.
    at = rows.ago(seconds=1000 - wss_mb)
    samples = [dict(instance_uuid=u, sampled_at=at,
                    wss_mb=wss_mb, current_mb=1024, estimator='libvirt')
               for u in uuids]
    return instances, samples


def test_bulk_statements_are_one_query_each(admin_context, mysql_db,
                                            monkeypatch):
    queries = _count_queries(monkeypatch)
    sent = {}
    load = dict(cpu_util=0.5, mem_used_mb=2048)
    for size in (3, 60):
        host = dict(name='host-%d' % size)
        db_reports.report_ingest(admin_context, host, *_report(size, 300),
                                 reported_at=rows.ago(seconds=700),
                                 host_sample=load)
        del queries[:]
        # Every instance changes: the upsert of them all.
        db_reports.report_ingest(admin_context, host, *_report(size, 400),
                                 reported_at=rows.ago(seconds=600),
                                 host_sample=load)
        sent[size] = list(queries)

    assert sent[3] == sent[60]
    assert [q[:3] for q in sent[60]] == [
        ['SELECT', 'hosts.id,', 'hosts.name,'],
        ['INSERT', 'INTO', 'hosts'],
        ['SELECT', 'instances.id,', 'instances.uuid,'],
        ['INSERT', 'INTO', 'instances'],
        ['SELECT', 'wss_samples.instance_uuid,', 'wss_samples.sampled_at'],
        ['INSERT', 'INTO', 'wss_samples'],
        ['SELECT', 'host_samples.host,', 'host_samples.sampled_at'],
        ['INSERT', 'INTO', 'host_samples']]


def test_batch_takes_the_statements_of_one_report(admin_context, mysql_db,
                                                  monkeypatch):
    queries = _count_queries(monkeypatch)
    load = dict(cpu_util=0.5, mem_used_mb=2048)

    def batch(reports, wss_mb):
        return [dict(host=dict(name='host-%d' % n),
                     reported_at=rows.ago(seconds=1000 - wss_mb),
                     host_sample=load, **dict(zip(
                         ('instances', 'samples'),
                         _report(20, wss_mb, prefix=n))))
                for n in range(reports)]

    sent = {}
    for reports in (1, 25):
        db_reports.report_ingest_batch(admin_context, batch(reports, 300))
        del queries[:]
        db_reports.report_ingest_batch(admin_context, batch(reports, 400))
        sent[reports] = list(queries)

    assert sent[1] == sent[25]
    assert len(sent[25]) == 8, sent[25]
