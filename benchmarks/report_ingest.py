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

"""Benchmark: compute reports ingested per second through RabbitMQ into
MariaDB.

Starts a real memagg-scheduler process on the RabbitMQ server the tests use
(MEMAGG_TEST_RABBIT_SERVER, default rabbit://guest:guest@127.0.0.1:5672)
with a fresh, migrated database on the MariaDB server the tests use
(memagg/tests/db_backends.py; MEMAGG_TEST_MYSQL_URL overrides it). Then
--nodes simulated compute nodes, each a thread with its own transport and
RPC client, cast --reports ComputeReports of --instances instances (one WSS
sample each) as fast as they can. The clock stops when every sample is in
the database (bounded by --deadline). Prints reports/s and samples/s
ingested, and the peer: the same reports stored by calling
memagg.db.reports.report_ingest directly from this process, without RPC. Topic
and exchange are unique to the run and its queues auto-delete; the database
is dropped at the end.

Run: .venv/bin/python benchmarks/report_ingest.py [--nodes 20] [--reports 10]
"""
import argparse
import pathlib
import sys
import tempfile
import threading
import time
import uuid

from oslo_utils import timeutils
import sqlalchemy as sa

from memagg.common import context as memagg_context
from memagg.common import rpc
from memagg.conf import CONF
from memagg.db import facade as db_facade
from memagg.db import migration
from memagg.db import reports as db_reports
from memagg.db.sqlalchemy import models
from memagg.objects import report as report_obj
from memagg.scheduler import rpcapi
from memagg.tests import db_backends
from memagg.tests.functional import service_procs
from memagg.tests import polling


def make_report(node, instances):
    now = timeutils.utcnow()
    uuids = [str(uuid.UUID(int=node * 100000 + i)) for i in range(instances)]
    return report_obj.ComputeReport(
        host='bench-node-%04d' % node, reported_at=now, memory_mb=262144,
        reserved_mb=4096, vcpus=64, cpu_util=0.3, free_reservoir_mb=8192,
        lendable_mb=0,
        instances=[report_obj.InstanceReport(
            uuid=u, name='vm-%d-%d' % (node, i), project_id='p%d' % (i % 5),
            booked_mb=4096, current_mb=3072, target_mb=None,
            wss_mb=1024 + i, wss_maxavg_mb=None, estimator='libvirt_stats',
            cpu_util=0.1) for i, u in enumerate(uuids)],
        samples=[report_obj.WssSample(
            instance_uuid=u, sampled_at=now, wss_mb=1024 + i,
            wss_maxavg_mb=None, current_mb=3072, target_mb=None,
            estimator='libvirt_stats') for i, u in enumerate(uuids)])


def count_samples():
    with db_facade.get_engine().connect() as conn:
        return conn.execute(sa.select(sa.func.count()).select_from(
            models.WssSample.__table__)).scalar()


def node(index, args, start, errors):
    try:
        transport = rpc.new_transport(CONF)
        api = rpcapi.SchedulerAPI(transport=transport)
        ctxt = memagg_context.get_admin_context()
        reports = [make_report(index, args.instances)
                   for _ in range(args.reports)]
        start.wait()
        for report in reports:
            api.report(ctxt, report)
        transport.cleanup()
    except Exception as exc:  # reported by the main thread
        errors.append(exc)


def through_rpc(args, workdir, db_url, server):
    run = uuid.uuid4().hex[:10]
    options = {
        'DEFAULT': {'transport_url': server,
                    'control_exchange': 'memagg_bench_%s' % run,
                    'host': 'bench-scheduler'},
        'database': {'connection': db_url},
        'scheduler': {'topic': 'memagg-scheduler-bench-%s' % run},
        'oslo_messaging_rabbit': {'amqp_auto_delete': True},
    }
    config = service_procs.write_config(workdir / 'memagg.conf', options)
    CONF.set_override('control_exchange',
                      options['DEFAULT']['control_exchange'])
    CONF.set_override('transport_url', server)
    CONF.set_override('topic', options['scheduler']['topic'],
                      group='scheduler')
    rpc.init(CONF)
    CONF.set_override('amqp_auto_delete', True,
                      group='oslo_messaging_rabbit')
    scheduler = service_procs.Process(
        'memagg-scheduler', ['--config-file', str(config)],
        workdir / 'scheduler.log')
    try:
        ctxt = memagg_context.get_admin_context()
        polling.wait_for(lambda: _pong(ctxt), 60,
                         message='memagg-scheduler answering')
        start, errors = threading.Event(), []
        threads = [threading.Thread(target=node, args=(i, args, start, errors))
                   for i in range(args.nodes)]
        for thread in threads:
            thread.start()
        expected = args.nodes * args.reports * args.instances
        began = time.monotonic()
        start.set()
        for thread in threads:
            thread.join()
        sent = time.monotonic() - began
        if errors:
            raise errors[0]
        polling.wait_for(lambda: count_samples() >= expected, args.deadline,
                         interval=0.2, message='%d samples stored' % expected)
        elapsed = time.monotonic() - began
    finally:
        code = scheduler.stop()
        rpc.cleanup()
    if code != 0:
        sys.exit('memagg-scheduler exited %s; see %s'
                 % (code, scheduler.log_path))
    return sent, elapsed


def _pong(ctxt):
    try:
        return rpcapi.SchedulerAPI().ping(ctxt, timeout=2)
    except Exception:
        return None


def direct(args):
    ctxt = memagg_context.get_admin_context()
    reports = [make_report(args.nodes + n, args.instances)
               for n in range(args.nodes) for _ in range(args.reports)]
    began = time.monotonic()
    for report in reports:
        host, instances, samples = report.to_db_values()
        db_reports.report_ingest(ctxt, host, instances, samples,
                                 reported_at=report.reported_at)
    return time.monotonic() - began


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--nodes', type=int, default=20)
    parser.add_argument('--reports', type=int, default=10,
                        help='reports each node sends')
    parser.add_argument('--instances', type=int, default=20,
                        help='instances (and WSS samples) per report')
    parser.add_argument('--deadline', type=float, default=300)
    args = parser.parse_args()
    CONF([], project='memagg', default_config_files=[])
    server = service_procs.RABBIT_SERVER + '/'
    reports = args.nodes * args.reports
    samples = reports * args.instances
    with tempfile.TemporaryDirectory() as tmp, \
            db_backends.provisioned('mysql', pathlib.Path(tmp)) as db_url:
        CONF.set_override('connection', db_url, group='database')
        db_facade.dispose()
        migration.upgrade('head')
        sent, elapsed = through_rpc(args, pathlib.Path(tmp), db_url, server)
        peer = direct(args)
        db_facade.dispose()
    print('%d nodes x %d reports x %d instances = %d reports, %d samples'
          % (args.nodes, args.reports, args.instances, reports, samples))
    print('casts sent in %.2f s: %.0f reports/s published'
          % (sent, reports / sent))
    print('through RabbitMQ into MariaDB: %.2f s, %.1f reports/s, '
          '%.0f samples/s ingested' % (elapsed, reports / elapsed,
                                       samples / elapsed))
    print('peer, report_ingest called directly (one thread, no RPC): '
          '%.2f s, %.1f reports/s, %.0f samples/s'
          % (peer, reports / peer, samples / peer))


if __name__ == '__main__':
    main()
