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

"""memagg.db.reports on SQLite, MariaDB and PostgreSQL (real servers): a
node's report upserted in a number of statements that does not grow with
its instances, stored once when redelivered, beside an older node's."""
import datetime

import pytest
import sqlalchemy as sa

from memagg.db import facade as db_facade
from memagg.db import grants as db_grants
from memagg.db import hosts as db_hosts
from memagg.db import instances as db_instances
from memagg.db import listings as db_listings
from memagg.db import reports as db_reports
from memagg.db import samples as db_samples
from memagg.db.sqlalchemy import models
from memagg.objects import report as objects_report
from memagg.tests.unit.db import rows

pytestmark = pytest.mark.functional


def test_report_ingest_upserts_and_marks_gone(admin_context, any_db):
    a, b, c = ('00000000-0000-0000-0000-00000000000%d' % n for n in (1, 2, 3))
    rows.insert(models.Instance, dict(uuid=c, host='host-2'))
    sample = dict(instance_uuid=a, sampled_at=rows.ago(seconds=10),
                  wss_mb=300, current_mb=1024, estimator='libvirt')

    db_reports.report_ingest(
        admin_context, dict(name='host-1', memory_mb=8192),
        [dict(uuid=a, booked_mb=1024, current_mb=1024),
         dict(uuid=b, booked_mb=2048, current_mb=2048)], [sample],
        reported_at=rows.ago(seconds=5))
    db_reports.report_ingest(
        admin_context, dict(name='host-1', memory_mb=8192,
                            free_reservoir_mb=512),
        [dict(uuid=a, booked_mb=1024, current_mb=768, wss_mb=300),
         dict(uuid=c, booked_mb=512, current_mb=512)],
        [dict(sample, sampled_at=rows.ago(seconds=1))])

    host = db_hosts.host_get(admin_context, 'host-1')
    assert (host.memory_mb, host.free_reservoir_mb) == (8192, 512)
    assert host.reported_at > rows.ago(seconds=5)
    state = {u: (i.host, i.status, i.current_mb) for u, i in (
        (u, db_instances.instance_get(admin_context, u)) for u in (a, b, c))}
    assert state == {a: ('host-1', 'active', 768),
                     b: ('host-1', 'gone', 2048),
                     c: ('host-1', 'active', 512)}
    samples = db_listings.list_resources(admin_context, 'wss_samples')
    assert [(s.instance_uuid, s.host) for s in samples] == [
        (a, 'host-1'), (a, 'host-1')]
    assert len(db_listings.list_resources(admin_context, 'hosts')) == 1


def test_report_ingest_writes_only_the_columns_reports_give(admin_context,
                                                            any_db):
    """A changed instance gets the columns its report gives and keeps the
    others (ingestion reads and writes only those); new instances of one
    batch that give different columns take the others' defaults."""
    a, b, c = ('00000000-0000-0000-0008-00000000000%d' % n for n in (1, 2, 3))
    db_reports.report_ingest(
        admin_context, dict(name='host-1'),
        [dict(uuid=a, booked_mb=1024, current_mb=1024, wss_mb=300)], [],
        reported_at=rows.ago(seconds=30))
    created = db_instances.instance_get(admin_context, a).created_at
    with db_facade.writer().using(admin_context) as session:
        session.execute(sa.update(models.Instance).where(
            models.Instance.uuid == a).values(reclaim_mechanism='madvise',
                                              remote_mb=64))

    db_reports.report_ingest_batch(admin_context, [
        dict(host=dict(name='host-1'), reported_at=rows.ago(seconds=20),
             instances=[dict(uuid=a, booked_mb=1024, current_mb=768,
                             wss_mb=400),
                        dict(uuid=b, booked_mb=512, sampler_pages=4610)],
             samples=[]),
        dict(host=dict(name='host-2'), reported_at=rows.ago(seconds=20),
             instances=[dict(uuid=c, booked_mb=256, warming=True)],
             samples=[])])

    instance = db_instances.instance_get(admin_context, a)
    assert (instance.current_mb, instance.wss_mb, instance.reclaim_mechanism,
            instance.remote_mb, instance.created_at) == (
        768, 400, 'madvise', 64, created)
    assert instance.updated_at is not None
    state = {u: (i.host, i.booked_mb, i.current_mb, i.sampler_pages,
                 i.warming, i.status) for u, i in (
        (u, db_instances.instance_get(admin_context, u)) for u in (b, c))}
    assert state == {b: ('host-1', 512, 0, 4610, False, 'active'),
                     c: ('host-2', 256, 0, None, True, 'active')}


def _round_trips(call):
    """Run ``call``; return the statements it sent to the database, one per
    round trip: an executemany of anything but an INSERT counts once per
    row, as the drivers (PyMySQL's for one) send those one by one."""
    sent = []

    def count(conn, cursor, statement, parameters, context, executemany):
        many = executemany and not statement.lstrip().startswith('INSERT')
        sent.extend([statement] * (len(parameters) if many else 1))

    engine = db_facade.get_engine()
    sa.event.listen(engine, 'before_cursor_execute', count)
    try:
        call()
    finally:
        sa.event.remove(engine, 'before_cursor_execute', count)
    return sent


def _report_of(size):
    """A report of ``size`` instances, every other one without wss_mb, and
    a sample each."""
    uuids = ['00000000-0000-0000-%04d-%012d' % (size, i) for i in range(size)]
    instances = [dict(uuid=u, booked_mb=1024, current_mb=1024,
                      **({'wss_mb': 300} if i % 2 else {}))
                 for i, u in enumerate(uuids)]
    samples = [dict(instance_uuid=u, sampled_at=rows.ago(seconds=10),
                    wss_mb=300, current_mb=1024, estimator='libvirt')
               for u in uuids]
    return instances, samples


def test_report_statements_do_not_grow_with_instances(admin_context, any_db):
    trips = {}
    for size in (5, 50):
        host = dict(name='host-%d' % size)
        instances, samples = _report_of(size)
        load = dict(cpu_util=0.5, mem_used_mb=2048)
        # Reports of three periods: a host sample is stored once per
        # second.
        first = _round_trips(lambda: db_reports.report_ingest(
            admin_context, host, instances, samples, host_sample=load,
            reported_at=rows.ago(seconds=3)))
        # All but the first change, the last is gone.
        again = [instances[0]] + [dict(i, current_mb=768)
                                  for i in instances[1:-1]]
        second = _round_trips(lambda: db_reports.report_ingest(
            admin_context, host, again, samples, host_sample=load,
            reported_at=rows.ago(seconds=2)))
        same = _round_trips(lambda: db_reports.report_ingest(
            admin_context, host, again, samples, host_sample=load,
            reported_at=rows.ago(seconds=1)))
        trips[size] = (len(first), len(second), len(same))

        state = [(i.uuid, i.status, i.current_mb, i.updated_at is None)
                 for i in db_listings.list_resources(
                     admin_context, 'instances',
                     filters={'host': host['name']}, sort_keys=['uuid'])]
        assert state == (
            [(instances[0]['uuid'], 'active', 1024, True)]
            + [(i['uuid'], 'active', 768, False) for i in instances[1:-1]]
            + [(instances[-1]['uuid'], 'gone', 1024, False)])
        # The same samples sent three times are stored once.
        assert len(db_listings.list_resources(
            admin_context, 'wss_samples', filters={
                'instance_uuid': instances[1]['uuid']})) == 1

    assert trips[5] == trips[50]
    # The eight statements a report of one host takes, and SQLite's BEGIN.
    assert max(trips[50]) <= 9


def test_report_batch_redelivered_stores_each_sample_once(admin_context,
                                                          any_db):
    """Several senders' reports in one batch, stored again as a redelivery
    after a worker's death would: each sample is stored once on every
    backend, whatever fraction of a second its DATETIME keeps."""
    at = rows.ago(seconds=30).replace(microsecond=750000)
    batch = []
    for n in range(3):
        instances, samples = _report_of(4 + n)
        batch.append(dict(
            host=dict(name='sender-%d' % n), instances=instances,
            samples=[dict(sample, sampled_at=at) for sample in samples],
            reported_at=at, host_sample=dict(cpu_util=0.5,
                                             mem_used_mb=1024)))

    db_reports.report_ingest_batch(admin_context, batch)
    db_reports.report_ingest_batch(admin_context, batch)
    db_reports.report_ingest_batch(admin_context, batch[1:2])

    assert len(db_listings.list_resources(
        admin_context, 'wss_samples', limit=100)) == 4 + 5 + 6
    assert db_samples.host_samples_latest(
        admin_context, ['sender-%d' % n for n in range(3)], 10) == {
            'sender-%d' % n: [(0.5, 1024)] for n in range(3)}
    assert len(db_listings.list_resources(
        admin_context, 'instances', filters={'status': 'active'},
        limit=100)) == 4 + 5 + 6


def test_a_report_stores_its_sampler_beside_one_from_an_older_node(
        admin_context, any_db):
    """Two compute nodes: one reports its VM's sampler (ComputeReport 1.3),
    the other is a release older (1.2, no sampler fields); both are stored,
    in as many statements as a report without sampler fields."""
    sampler = dict(sampler_backend='damon_paddr', sampler_error_mb=0.8,
                   sampler_pages=4610, warming=True)
    new_uuid, old_uuid = ('00000000-0000-0000-0007-00000000000%d' % n
                          for n in (1, 2))

    def report(host, uuid, **extra):
        return objects_report.ComputeReport(
            host=host, reported_at=rows.ago(seconds=1), memory_mb=4096,
            reserved_mb=0, vcpus=2, cpu_util=0.1, free_reservoir_mb=0,
            lendable_mb=0, mem_used_mb=40,
            instances=[objects_report.InstanceReport(
                uuid=uuid, name='vm', project_id=None, booked_mb=1024,
                current_mb=1024, target_mb=None, wss_mb=40,
                wss_maxavg_mb=None, estimator='badis/V/sampler',
                cpu_util=0.1, vcpus=1, **extra)],
            samples=[objects_report.WssSample(
                instance_uuid=uuid, sampled_at=rows.ago(seconds=1),
                wss_mb=40, wss_maxavg_mb=None, current_mb=1024,
                target_mb=None, estimator='badis/V/sampler', cpu_util=0.1,
                **extra)])

    older = objects_report.ComputeReport.obj_from_primitive(
        report('host-old', old_uuid).obj_to_primitive(target_version='1.2'))
    trips = [len(_round_trips(lambda r=r: db_reports.report_ingest(
        admin_context, *r.to_db_values(), host_sample=r.host_sample())))
        for r in (report('host-new', new_uuid, **sampler), older)]

    assert trips[0] == trips[1]
    for uuid, expected in ((new_uuid, sampler), (old_uuid, dict(
            sampler_backend=None, sampler_error_mb=None, sampler_pages=None,
            warming=False))):
        instance = db_instances.instance_get(admin_context, uuid)
        sample, = db_listings.list_resources(
            admin_context, 'wss_samples', filters={'instance_uuid': uuid})
        for row in (instance, sample):
            assert {k: getattr(row, k) for k in expected} == expected


def _ledger(grant, used):
    return dict(dict.fromkeys(objects_report.LEDGER_COUNTS, 0),
                grant_uuid=grant, l1_puts=used, l1_used=used,
                l1_gets=3 * used)


def test_a_grants_ledger_is_its_consumers_newest_report(admin_context,
                                                        any_db):
    """A grant's ledger is the newest report's of its consumer host: not a
    late report's, not another host's (a migrated VM's source), not one
    of a grant the database does not hold; a report's ledgers take the
    same statements whatever their number."""
    mine, theirs, unknown = ('00000000-0000-0000-0009-00000000000%d' % n
                             for n in (1, 2, 3))
    rows.insert(models.Grant, dict(uuid=mine, consumer_host='host-1'),
                dict(uuid=theirs, consumer_host='host-2'))

    now = rows.ago(seconds=0)

    def ingest(seconds, *ledgers):
        return _round_trips(lambda: db_reports.report_ingest(
            admin_context, dict(name='host-1'), [], [],
            reported_at=now - datetime.timedelta(seconds=seconds),
            ledgers=list(ledgers)))

    first = ingest(30, _ledger(mine, 100), _ledger(theirs, 7),
                   _ledger(unknown, 9))
    ingest(20, _ledger(mine, 200))
    # A late report does not take the ledger back.
    ingest(25, _ledger(mine, 150))
    table = models.GrantLedger.__table__
    with db_facade.get_engine().connect() as conn:
        [row] = conn.execute(sa.select(table)).all()
    assert (row.grant_uuid, row.host, row.l1_used, row.l1_gets,
            row.reported_at) == (mine, 'host-1', 200, 600,
                                 now - datetime.timedelta(seconds=20))
    ledger = db_grants.grant_get(admin_context, mine).ledger
    assert (ledger.l1_puts, ledger.l2_used) == (200, 0)
    assert db_grants.grant_get(admin_context, theirs).ledger is None
    # Past the hosts' and instances' statements: the grants' consumers,
    # the ledgers' read and their insert (SQLite's BEGIN aside).
    assert len(first) <= 9 + 3


def _at(minutes):
    return rows.ago(hours=1) + datetime.timedelta(minutes=minutes)


def test_report_stores_a_host_sample_at_the_report_time(db):
    at = rows.ago(minutes=5)
    db_reports.report_ingest(db, dict(name='h1', memory_mb=4096), [], [],
                             reported_at=at,
                             host_sample=dict(cpu_util=0.25, mem_used_mb=700))

    assert db_samples.host_samples_latest(db, ['h1'], 10) == {
        'h1': [(0.25, 700)]}
    with db_facade.get_engine().connect() as connection:
        stored = connection.execute(sa.select(
            models.HostSample.host, models.HostSample.sampled_at)).all()
    assert stored == [('h1', at)]
