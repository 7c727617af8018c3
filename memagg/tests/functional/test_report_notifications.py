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

"""Reports as notifications on real RabbitMQ into the real databases:
memagg-compute's columnar payload, memagg-scheduler's batch listener
(memagg.scheduler.report_listener) storing it, two listeners sharing the
pool, malformed payloads, and a database outage requeueing."""
import datetime
import json
import threading
import uuid

from oslo_utils import timeutils
import oslo_messaging as messaging
from oslo_messaging._drivers import amqpdriver
import pytest
import sqlalchemy as sa

from memagg.common import context as memagg_context
from memagg.common import rpc
from memagg.db import facade as db_facade
from memagg.db import report_columns
from memagg.db.sqlalchemy import models
from memagg.objects import base as objects_base
from memagg.objects import report as report_obj
from memagg.scheduler import report_listener
from memagg.scheduler import rpcapi
from memagg.tests import polling
from memagg.tests.unit.db import rows

pytestmark = [pytest.mark.functional]

INSTANCES = 5


def grant_of(node):
    """The uuid of the grant node ``node``'s report carries the ledger of."""
    return str(uuid.UUID(int=(1 << 64) + node))


def make_report(node, at=None):
    at = at or timeutils.utcnow().replace(microsecond=0)
    uuids = [str(uuid.UUID(int=node * 1000 + i + 1)) for i in
             range(INSTANCES)]
    return report_obj.ComputeReport(
        host='node-%03d' % node, reported_at=at, memory_mb=65536,
        reserved_mb=1024, vcpus=16, cpu_util=0.25, free_reservoir_mb=2048,
        lendable_mb=512, mem_used_mb=4000,
        instances=[report_obj.InstanceReport(
            uuid=u, name='vm-%d' % i, project_id='p', booked_mb=2048,
            current_mb=1536, target_mb=None, wss_mb=700 + i,
            wss_maxavg_mb=800, estimator='sampler', cpu_util=0.5, vcpus=2,
            sampler_backend='damon', sampler_error_mb=3.5)
            for i, u in enumerate(uuids)],
        samples=[report_obj.WssSample(
            instance_uuid=u, sampled_at=at, wss_mb=700 + i,
            wss_maxavg_mb=800, current_mb=1536, target_mb=None,
            estimator='sampler', cpu_util=1.0)
            for i, u in enumerate(uuids)],
        ledgers=[report_obj.GrantLedger(
            grant_uuid=grant_of(node),
            **dict(dict.fromkeys(report_obj.LEDGER_COUNTS, 0), l1_puts=node,
                   l1_used=node))])


def _count(table, **where):
    table = table.__table__
    query = sa.select(sa.func.count()).select_from(table)
    for column, value in where.items():
        query = query.where(table.c[column] == value)
    with db_facade.get_engine().connect() as conn:
        return conn.execute(query).scalar()


def test_payload_round_trip():
    """The columnar payload, through JSON, gives report_ingest_batch what
    the versioned object gives it."""
    report = make_report(3)
    delattr(report.instances[1], 'sampler_backend')
    payload = json.loads(json.dumps(report_columns.to_payload(report)))
    assert payload['format'] == report_columns.FORMAT_VERSION
    assert len(payload['instances']['uuid']) == INSTANCES
    got = report_columns.from_payload(payload)
    host, instances, samples = report.to_db_values()
    assert got['host'] == host
    assert got['reported_at'] == report.reported_at
    assert got['host_sample'] == report.host_sample()
    # An instance that does not set a field the others set takes the
    # field's default in its column.
    instances[1]['sampler_backend'] = None
    assert got['instances'] == instances
    assert got['samples'] == samples
    assert got['ledgers'] == [ledger.as_dict() for ledger in report.ledgers]


def test_payload_newer_minor_read_other_major_refused():
    payload = report_columns.to_payload(make_report(1))
    payload['format'] = '1.7'
    payload['instances']['colour'] = ['blue'] * INSTANCES
    assert 'colour' not in report_columns.from_payload(
        payload)['instances'][0]
    payload['format'] = '1.0'
    with pytest.raises(Exception, match='colour'):
        report_columns.from_payload(payload)
    payload['format'] = '2.0'
    with pytest.raises(report_columns.UnknownFormat, match='2.0'):
        report_columns.from_payload(payload)
    payload = report_columns.to_payload(make_report(1))
    payload['samples']['wss_mb'].pop()
    with pytest.raises(Exception, match='samples.*different lengths'):
        report_columns.from_payload(payload)


@pytest.fixture
def bus(conf, rabbit_url):
    """memagg's transports on RabbitMQ with a report topic of this test's
    own; yields a function starting a ReportListener (stopped after)."""
    conf.config(transport_url=rabbit_url)
    conf.config(report_topic='memagg_reports_%s' % uuid.uuid4().hex[:10],
                report_batch_size=10, report_batch_timeout=0.2,
                group='scheduler')
    rpc.cleanup()
    rpc.init(conf.conf)
    listeners = []

    def start(wrap=None):
        listener = report_listener.ReportListener(
            conf.conf, memagg_context.get_admin_context(), retry_delay=0.5)
        if wrap is not None:
            wrap(listener.endpoint)
        listener.start()
        listeners.append(listener)
        polling.wait_for(listener.connected.is_set, 30,
                         message='report listener connected')
        return listener

    yield start
    for listener in listeners:
        listener.stop()
    rpc.cleanup()


def test_listener_paces_the_drivers_idle_polls(bus, monkeypatch):
    """A report listener makes the RabbitMQ driver's listeners wait
    IDLE_POLL, not 1 ms, for a message when none is ready; the tests of
    this module store and acknowledge reports with that pace."""
    monkeypatch.setattr(amqpdriver, 'ACK_REQUEUE_EVERY_SECONDS_MIN', 0.001)
    bus()
    assert (amqpdriver.ACK_REQUEUE_EVERY_SECONDS_MIN
            == report_listener.IDLE_POLL)


def _counting(counts, name):
    """Wrap an endpoint's info so that ``counts[name]`` adds up the
    reports it is handed."""
    lock = threading.Lock()

    def wrap(endpoint):
        info = endpoint.info

        def counted(messages):
            result = info(messages)
            with lock:
                counts[name] = counts.get(name, 0) + len(messages)
            return result
        endpoint.info = counted
    return wrap


def test_listener_stores_reports_end_to_end(bus, any_db):
    bus()
    api = rpcapi.SchedulerAPI()
    ctxt = memagg_context.get_admin_context()
    # The grant of node 5's ledger is node 5's: it is stored.
    rows.insert(models.Grant, dict(uuid=grant_of(5),
                                   consumer_host='node-005'))
    for node in range(12):
        api.report(ctxt, make_report(node))
    polling.wait_for(
        lambda: _count(models.WssSample) == 12 * INSTANCES, 60,
        message='%d samples stored' % (12 * INSTANCES))
    assert _count(models.Host) == 12
    assert _count(models.HostSample, host='node-004') == 1
    assert _count(models.Instance, host='node-007') == INSTANCES
    with db_facade.get_engine().connect() as conn:
        row = conn.execute(sa.select(models.Instance.__table__).where(
            models.Instance.__table__.c.uuid == str(uuid.UUID(
                int=7 * 1000 + 3)))).one()
    assert (row.wss_mb, row.sampler_backend, row.sampler_error_mb) == (
        702, 'damon', 3.5)
    assert _count(models.GrantLedger) == 1
    assert _count(models.GrantLedger, grant_uuid=grant_of(5),
                  host='node-005', l1_used=5) == 1


class _OldScheduler:
    """The RPC endpoint of a memagg-scheduler of API 1.5: reports only by
    the ``report`` cast."""

    target = messaging.Target(version='1.5')

    def __init__(self):
        self.reports = []

    @messaging.expose
    def report(self, ctxt, report):
        self.reports.append(report)


def test_rpc_cast_while_pinned_below_1_6(bus, conf):
    """A compute node pinned below 1.6 casts ``report``, which a 1.5
    scheduler reads; nothing goes to the report topic."""
    conf.config(topic='memagg-scheduler-%s' % uuid.uuid4().hex[:10],
                group='scheduler')
    conf.config(scheduler='1.5', group='upgrade_levels')
    old = _OldScheduler()
    server = rpc.get_server(
        conf.conf.scheduler.topic, 'old', [old],
        serializer=objects_base.MemaggObjectSerializer())
    server.start()
    try:
        api = rpcapi.SchedulerAPI()
        api.report(memagg_context.get_admin_context(), make_report(1))
        polling.wait_for(lambda: old.reports, 30,
                         message='the report cast received')
    finally:
        server.stop()
        server.wait()
    assert old.reports[0].host == 'node-001'
    assert api._notifier is None


def test_two_listeners_share_the_pool(bus, mysql_db):
    counts = {}
    bus(_counting(counts, 'a'))
    bus(_counting(counts, 'b'))
    api = rpcapi.SchedulerAPI()
    ctxt = memagg_context.get_admin_context()
    reports = [make_report(node) for node in range(40)]
    for report in reports:
        api.report(ctxt, report)
    polling.wait_for(lambda: sum(counts.values()) == 40, 60,
                     message='40 reports handled')
    assert counts.get('a', 0) > 0 and counts.get('b', 0) > 0, counts
    # The same reports again, as after a worker died before its
    # acknowledgement: nothing is stored twice.
    for report in reports:
        api.report(ctxt, report)
    polling.wait_for(lambda: sum(counts.values()) == 80, 60,
                     message='80 reports handled')
    assert _count(models.WssSample) == 40 * INSTANCES
    assert _count(models.HostSample) == 40


def test_malformed_and_unknown_version_dropped(bus, conf, mysql_db,
                                               caplog):
    bus()
    transport = rpc.new_notification_transport(conf.conf)
    notifier = rpc.report_notifier(conf.conf.scheduler.report_topic,
                                   transport)
    try:
        future = report_columns.to_payload(make_report(1))
        future['format'] = '2.0'
        broken = report_columns.to_payload(make_report(2))
        broken['samples']['wss_mb'] = broken['samples']['wss_mb'][:2]
        for payload in (future, 'not a report', broken, future):
            notifier.info({}, rpcapi.SchedulerAPI.REPORT_EVENT, payload)
        notifier.info({}, rpcapi.SchedulerAPI.REPORT_EVENT,
                      report_columns.to_payload(make_report(3)))
    finally:
        transport.cleanup()
    polling.wait_for(
        lambda: _count(models.WssSample, host='node-003') == INSTANCES, 60,
        message='the good report stored')
    assert _count(models.WssSample) == INSTANCES
    assert caplog.text.count('not readable here') == 1
    assert 'different lengths' in caplog.text
    assert 'must be an object' in caplog.text


def test_database_outage_requeues(bus, conf, mysql_db, caplog,
                                  monkeypatch):
    monkeypatch.setattr(report_listener, 'REQUEUE_PAUSE', 0.2)
    bus()
    conf.config(connection='mysql+pymysql://nobody:x@127.0.0.1:9/none',
                max_retries=0, group='database')
    db_facade.dispose()
    api = rpcapi.SchedulerAPI()
    at = timeutils.utcnow().replace(microsecond=0) - datetime.timedelta(
        seconds=30)
    api.report(memagg_context.get_admin_context(), make_report(5, at))
    polling.wait_for(lambda: 'requeued' in caplog.text, 60,
                     message='a batch requeued')
    conf.config(connection=mysql_db, group='database')
    db_facade.dispose()
    polling.wait_for(
        lambda: _count(models.WssSample, host='node-005') == INSTANCES, 60,
        message='the requeued report stored')
    assert _count(models.HostSample, host='node-005') == 1


def test_a_report_the_database_refuses_costs_the_others_nothing(
        conf, mysql_db, caplog):
    """MariaDB refuses a value out of its column's range, and with it the
    batch's transaction: each report is then stored alone, the refused one
    dropped and logged, the others stored."""
    refused = report_columns.to_payload(make_report(2))
    refused['host']['memory_mb'] = 10 ** 12
    messages = [dict(publisher_id='memagg-compute:node-%03d' % node,
                     payload=payload)
                for node, payload in (
                    (1, report_columns.to_payload(make_report(1))),
                    (2, refused),
                    (3, report_columns.to_payload(make_report(3))))]
    endpoint = report_listener.ReportEndpoint(
        memagg_context.get_admin_context())
    assert (endpoint.info(messages) ==
            messaging.NotificationResult.HANDLED)
    assert _count(models.WssSample, host='node-001') == INSTANCES
    assert _count(models.WssSample, host='node-003') == INSTANCES
    assert _count(models.Host, name='node-002') == 0
    assert 'Dropping the report of node-002' in caplog.text
