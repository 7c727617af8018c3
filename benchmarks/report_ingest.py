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
memagg.db.reports.report_ingest_batch directly from this process, without
RPC, --batch reports at a time (default 1), and its CPU per report. Topic
and exchange are unique to the run and its queues auto-delete; the database
is dropped at the end.

Run: .venv/bin/python benchmarks/report_ingest.py [--nodes 20] [--reports 10]

With --fleet, a steady load instead: --nodes (default 1,000) simulated
compute nodes each send one real ComputeReport (--instances instances,
default 20) every --period seconds (default 10, the default
collect_interval) through RabbitMQ, spread over the period and over
--senders processes, for --duration seconds (default 60). It runs once per
count of --workers (default 1,2) and per --paths (default notify,rpc):
``notify``, memagg-compute's way, the report notification with its columnar
payload that the schedulers store in batches
(memagg.scheduler.report_listener); ``rpc``, the peer, the ``report`` cast
of a compute node pinned below scheduler API 1.6. Each run starts that many
real memagg-scheduler processes, coordinated through tooz on the same
MariaDB when there are several. Every --sample-every seconds it prints the
reports sent and stored, the lag (sent but not stored yet), the depth of
the queue the reports go through (rabbitmqctl list_queues: ready and
unacknowledged messages), each worker's CPU seconds and resident memory
(/proc); then the scheduler CPU per report and per node, rpc against
notify with their ratio, and checks that every sample sent was stored
once.

Run: .venv/bin/python benchmarks/report_ingest.py --fleet [--nodes 1000]
     [--duration 600] [--workers 1,2] [--paths notify,rpc]
"""
import argparse
import datetime
import heapq
import multiprocessing
import os
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
from memagg.scheduler import report_listener
from memagg.scheduler import rpcapi
from memagg.tests import db_backends
from memagg.tests.functional import service_procs
from memagg.tests import polling

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _gauges  # noqa: E402
import _sigterm  # noqa: E402


def make_report(node, instances, age=0):
    """A report of ``node`` taken ``age`` seconds ago: a node's reports
    differ in age, as the scheduler stores a sample once per second."""
    now = timeutils.utcnow() - datetime.timedelta(seconds=age)
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
        reports = [make_report(index, args.instances, age)
                   for age in range(args.reports, 0, -1)]
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
    """Store the reports with report_ingest_batch, --batch at a time;
    return the wall and CPU seconds of this process."""
    ctxt = memagg_context.get_admin_context()
    reports = [make_report(args.nodes + n, args.instances, age)
               for n in range(args.nodes)
               for age in range(args.reports, 0, -1)]
    began, cpu = time.monotonic(), time.process_time()
    for start in range(0, len(reports), args.batch):
        batch = []
        for report in reports[start:start + args.batch]:
            host, instances, samples = report.to_db_values()
            batch.append(dict(host=host, instances=instances,
                              samples=samples,
                              reported_at=report.reported_at))
        db_reports.report_ingest_batch(ctxt, batch)
    return time.monotonic() - began, time.process_time() - cpu


# -- --fleet: a steady load of many nodes -------------------------------------

#: Bound on the senders' set-up (transports, reports), waited for both by
#: the parent and by each sender.
SET_UP_S = 120


def _sender(index, args, options, path, counter, ready, go, start):
    """One sender process: the nodes index, index + senders, ... each send
    a report every period, at their own phase of it, by ``path`` (notify
    or rpc), for --duration seconds from ``start``'s time. Counts itself
    in ``ready`` once set up, then waits for the parent's ``go``."""
    CONF.set_override('transport_url', options['DEFAULT']['transport_url'])
    CONF.set_override('control_exchange',
                      options['DEFAULT']['control_exchange'])
    for name in ('topic', 'report_topic'):
        CONF.set_override(name, options['scheduler'][name],
                          group='scheduler')
    if path == 'rpc':
        CONF.set_override('scheduler', '1.5', group='upgrade_levels')
    transport = rpc.new_transport(CONF)
    notifications = rpc.new_notification_transport(CONF)
    # Registered with the transport; read when the exchange is declared.
    CONF.set_override('amqp_auto_delete', True,
                      group='oslo_messaging_rabbit')
    api = rpcapi.SchedulerAPI(transport=transport,
                              notification_transport=notifications)
    ctxt = memagg_context.get_admin_context()
    nodes = range(index, args.nodes, args.senders)
    reports = {n: make_report(n, args.instances) for n in nodes}
    with ready.get_lock():
        ready.value += 1
    if not go.wait(SET_UP_S):
        raise RuntimeError('sender %d: no start after %d s'
                           % (index, SET_UP_S))
    start_at = start.value
    stop_at = start_at + args.duration
    due = [(start_at + args.period * n / args.nodes, n) for n in nodes]
    heapq.heapify(due)
    while due:
        at, n = heapq.heappop(due)
        # Every report due before the end is sent, late ones back to back:
        # a run sends nodes x duration / period reports however busy the
        # machine (starved senders that stopped on time sent 39 of a
        # quick run's 60 reports under twice CI's load).
        if at >= stop_at:
            break
        # Pacing of the load, not synchronization: a node reports on time.
        time.sleep(max(0.0, at - time.time()))
        report = reports[n]
        # Stamped at its due time, as a node's period loop stamps its own:
        # a sender the machine delays sends late reports back to back, and
        # two of a node stamped in the same second store as one (the
        # scheduler keeps one sample per instance and second): a CI run
        # counted 295 samples stored of 300 sent, none queued.
        now = datetime.datetime.fromtimestamp(
            at, datetime.timezone.utc).replace(tzinfo=None)
        report.reported_at = now
        for sample in report.samples:
            sample.sampled_at = now
        api.report(ctxt, report)
        with counter.get_lock():
            counter.value += 1
        heapq.heappush(due, (at + args.period, n))
    transport.cleanup()
    notifications.cleanup()


def _max_sample_id():
    with db_facade.get_engine().connect() as conn:
        return conn.execute(sa.select(sa.func.max(
            models.WssSample.__table__.c.id))).scalar() or 0


def fleet_phase(args, workdir, db_url, server, workers, path):
    """One run of the steady load with ``workers`` schedulers, reports
    sent by ``path``; a dict of its figures."""
    run = uuid.uuid4().hex[:10]
    topic = 'memagg-scheduler-bench-%s' % run
    report_topic = 'memagg-reports-bench-%s' % run
    queue = (report_listener.pool_name(report_topic) if path == 'notify'
             else topic)
    options = {
        'DEFAULT': {'transport_url': server,
                    'control_exchange': 'memagg_bench_%s' % run},
        'database': {'connection': db_url},
        'scheduler': {'topic': topic, 'report_topic': report_topic},
        'oslo_messaging_rabbit': {'amqp_auto_delete': True},
    }
    for group, name, value in args.scheduler_option:
        options.setdefault(group, {})[name] = value
    if workers > 1:
        url = sa.engine.make_url(db_url)
        options['coordination'] = {'backend_url': 'mysql://%s@%s:%s/%s' % (
            url.username, url.host, url.port or 3306, url.database)}
    procs = []
    for w in range(workers):
        options['DEFAULT']['host'] = 'bench-scheduler-%d' % w
        config = service_procs.write_config(
            workdir / ('scheduler-%s-%d.conf' % (run, w)), options)
        procs.append(service_procs.Process(
            'memagg-scheduler', ['--config-file', str(config)],
            workdir / ('scheduler-%s-%d.log' % (run, w))))
    senders = []
    try:
        polling.wait_for(
            lambda: all('serving topic' in p.log() for p in procs), 60,
            interval=0.2, message='every memagg-scheduler serving')
        base_id = _max_sample_id()
        counter = multiprocessing.Value('q', 0)
        ready = multiprocessing.Value('q', 0)
        go = multiprocessing.Event()
        start = multiprocessing.Value('d', 0.0)
        senders = [multiprocessing.Process(
            target=_sender, args=(i, args, options, path, counter, ready,
                                  go, start), daemon=True)
                   for i in range(args.senders)]
        for sender in senders:
            sender.start()
        # The clock starts once every sender is set up (its transports
        # built, its reports made): a CI run whose machine was busy sent
        # nothing at all, as its senders were still setting up when a
        # fixed 2 s lead and the 3 s run were over.
        polling.wait_for(
            lambda: ready.value == len(senders)
            or any(sender.exitcode for sender in senders), SET_UP_S,
            interval=0.05, message='%d senders set up' % len(senders))
        if any(sender.exitcode for sender in senders):
            sys.exit('a sender failed (exit %s)' % [
                sender.exitcode for sender in senders])
        start_at = time.time() + 0.5
        stop_at = start_at + args.duration
        start.value = start_at
        go.set()
        pids = [p.proc.pid for p in procs]
        rows = []
        print('\n%s, %d worker(s), %d nodes x %d instances every %g s for '
              '%g s' % (path, workers, args.nodes, args.instances,
                        args.period, args.duration))
        print('%6s %8s %8s %6s %7s %7s  %-24s %s' % (
            't (s)', 'sent', 'stored', 'lag', 'ready', 'unacked',
            'CPU s (per worker)', 'RSS MiB (per worker)'))
        time.sleep(max(0.0, start_at - time.time()))
        next_at = start_at
        while True:
            now = time.time()
            for p in procs:
                if not p.alive():
                    sys.exit('memagg-scheduler exited; see %s' % p.log_path)
            if any(sender.exitcode for sender in senders):
                sys.exit('a sender failed (exit %s)' % [
                    sender.exitcode for sender in senders])
            stored = (_max_sample_id() - base_id) // args.instances
            ready, unacked = _gauges.queue_depth('/', queue)
            row = dict(t=now - start_at, sent=counter.value, stored=stored,
                       ready=ready, unacked=unacked,
                       cpu=[_gauges.cpu_seconds(pid) for pid in pids],
                       rss=[_gauges.rss_mb(pid) for pid in pids])
            rows.append(row)
            print('%6.0f %8d %8d %6d %7d %7d  %-24s %s' % (
                row['t'], row['sent'], stored, row['sent'] - stored, ready,
                unacked, ' '.join('%.1f' % c for c in row['cpu']),
                ' '.join('%.0f' % r for r in row['rss'])), flush=True)
            done = now >= stop_at and all(
                not sender.is_alive() for sender in senders)
            drained = done and stored >= counter.value
            if drained or now >= stop_at + args.deadline:
                break
            next_at += args.sample_every
            # Pacing of the samples, not synchronization.
            time.sleep(max(0.5, next_at - time.time()))
        for sender in senders:
            sender.join()
            if sender.exitcode:
                sys.exit('a sender failed (exit %s)' % sender.exitcode)
        sent = counter.value
        with db_facade.get_engine().connect() as conn:
            total = conn.execute(sa.select(sa.func.count()).select_from(
                models.WssSample.__table__).where(
                    models.WssSample.__table__.c.id > base_id)).scalar()
    finally:
        for sender in senders:
            if sender.is_alive():
                sender.terminate()
        # A worker still holding a backlog may take long to stop.
        codes = [p.stop(timeout=120) for p in procs]
    if any(codes):
        sys.exit('memagg-scheduler exited %s; see %s' % (
            codes, ', '.join(str(p.log_path) for p in procs)))
    # The first period warms up (imports, connections, first rows of every
    # host); the figures come from the rest.
    warm = next((r for r in rows if r['t'] >= args.period), rows[0])
    last = rows[-1]
    reports = last['stored'] - warm['stored']
    cpu = sum(last['cpu']) - sum(warm['cpu'])
    span = last['t'] - warm['t']
    return dict(path=path, workers=workers, sent=sent, samples=total,
                drained=drained, expected=sent * args.instances,
                reports=reports, cpu=cpu, span=span,
                ms_per_report=1000.0 * cpu / reports if reports else 0.0,
                cores=cpu / span if span else 0.0,
                max_lag=max(r['sent'] - r['stored'] for r in rows),
                max_queue=max(r['ready'] + r['unacked'] for r in rows),
                rss_warm=sum(warm['rss']), rss_last=sum(last['rss']),
                rss_max=max(sum(r['rss']) for r in rows),
                per_worker=[c - w for c, w in zip(last['cpu'],
                                                  warm['cpu'])])


def fleet(args):
    CONF([], project='memagg', default_config_files=[])
    # A SIGTERM stops the schedulers and drops the database, as ^C does.
    _sigterm.exit_on_sigterm()
    server = service_procs.RABBIT_SERVER + '/'
    results = []
    with tempfile.TemporaryDirectory() as tmp, \
            db_backends.provisioned('mysql', pathlib.Path(tmp)) as db_url:
        CONF.set_override('connection', db_url, group='database')
        db_facade.dispose()
        migration.upgrade('head')
        for workers in args.workers:
            for path in args.paths:
                results.append(fleet_phase(args, pathlib.Path(tmp), db_url,
                                           server, workers, path))
        db_facade.dispose()
    print('\npath    workers  reports  samples stored/sent  scheduler CPU  '
          'ms/report  cores  max lag  max queue  RSS MiB warm->end (max)')
    for r in results:
        print('%-7s %7d %8d %8d/%-8d %10.1f s %10.2f %6.3f %8d %10d  '
              '%.0f->%.0f (%.0f)' % (
                  r['path'], r['workers'], r['reports'], r['samples'],
                  r['expected'], r['cpu'], r['ms_per_report'], r['cores'],
                  r['max_lag'], r['max_queue'], r['rss_warm'],
                  r['rss_last'], r['rss_max']))
        if r['workers'] > 1:
            print('        CPU s per worker: %s' % ', '.join(
                '%.1f' % c for c in r['per_worker']))
    by = {(r['path'], r['workers']): r for r in results}
    for workers in args.workers:
        new, peer = by.get(('notify', workers)), by.get(('rpc', workers))
        if new and peer:
            # /proc counts CPU in 10 ms ticks: a short run (CI's, 3 s) may
            # see none after its first period, and the ratio is then said
            # to be unknown rather than left out.
            ratio = ('%.1fx' % (peer['ms_per_report'] / new['ms_per_report'])
                     if new['ms_per_report'] else
                     'unknown (no scheduler CPU tick counted for notify '
                     'after the first period: run longer)')
            print('%d worker(s): scheduler CPU per report notify %.2f ms, '
                  'rpc (peer) %.2f ms: rpc/notify %s' % (
                      workers, new['ms_per_report'], peer['ms_per_report'],
                      ratio))
    for r in results:
        if not r['drained']:
            print('%s, %d worker(s): NOT KEEPING UP: %d reports not stored '
                  '%g s after the load stopped' % (
                      r['path'], r['workers'], r['expected'] // args.instances
                      - r['samples'] // args.instances, args.deadline))
        elif r['samples'] != r['expected']:
            sys.exit('%s, %d worker(s): %d samples stored for %d sent'
                     % (r['path'], r['workers'], r['samples'],
                        r['expected']))
    if all(r['drained'] for r in results):
        print('every sample sent was stored once')


def _workers(text):
    try:
        counts = [int(n) for n in text.split(',')]
    except ValueError:
        counts = []
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError(
            'a comma-separated list of worker counts such as 1,2, got %r'
            % text)
    return counts


def _paths(text):
    paths = text.split(',')
    if not set(paths) <= {'notify', 'rpc'}:
        raise argparse.ArgumentTypeError(
            'a comma-separated list of notify and rpc, got %r' % text)
    return paths


def _option(text):
    group_name, sep, value = text.partition('=')
    group, dot, name = group_name.rpartition('.')
    if not sep or not dot or not group or not name:
        raise argparse.ArgumentTypeError(
            'GROUP.NAME=VALUE such as DEFAULT.executor_thread_pool_size=8, '
            'got %r' % text)
    return group, name, value


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--fleet', action='store_true',
                        help='a steady load of --nodes nodes reporting '
                             'every --period s (see above)')
    parser.add_argument('--nodes', type=int, default=None,
                        help='simulated compute nodes (default 20, or '
                             '1000 with --fleet)')
    parser.add_argument('--reports', type=int, default=10,
                        help='reports each node sends')
    parser.add_argument('--instances', type=int, default=20,
                        help='instances (and WSS samples) per report')
    parser.add_argument('--batch', type=int, default=1,
                        help='reports per report_ingest_batch call of the '
                             'peer (the direct mode)')
    parser.add_argument('--deadline', type=float, default=None,
                        help='seconds to wait for the last report to be '
                             'stored (default 300; with --fleet, 60 after '
                             'the load stopped)')
    parser.add_argument('--period', type=float, default=10.0,
                        help='--fleet: seconds between two reports of a '
                             'node')
    parser.add_argument('--duration', type=float, default=60.0,
                        help='--fleet: seconds of load per worker count')
    parser.add_argument('--workers', type=_workers, default=[1, 2],
                        help='--fleet: worker counts to run, e.g. 1,2')
    parser.add_argument('--paths', type=_paths, default=['notify', 'rpc'],
                        help='--fleet: how the nodes send their reports: '
                             'notify (notification, batches), rpc (the '
                             'report cast), or both, e.g. notify,rpc')
    parser.add_argument('--senders', type=int, default=2,
                        help='--fleet: sender processes')
    parser.add_argument('--scheduler-option', type=_option, action='append',
                        default=[], metavar='GROUP.NAME=VALUE',
                        help='--fleet: an option of the schedulers\' '
                             'memagg.conf (repeatable)')
    parser.add_argument('--sample-every', type=float, default=10.0,
                        help='--fleet: seconds between two samples')
    args = parser.parse_args()
    for name in ('nodes', 'reports', 'instances', 'senders', 'batch'):
        value = getattr(args, name)
        if value is not None and value < 1:
            parser.error('--%s: must be at least 1, got %d' % (name, value))
    for name in ('period', 'duration', 'sample_every'):
        if getattr(args, name) <= 0:
            parser.error('--%s: must be positive, got %g' % (
                name.replace('_', '-'), getattr(args, name)))
    if args.period < 1:
        parser.error('--period: must be at least 1 s (the scheduler keeps '
                     'one sample per instance and second), got %g'
                     % args.period)
    if args.fleet:
        args.nodes = args.nodes or 1000
        args.deadline = 60.0 if args.deadline is None else args.deadline
        fleet(args)
        return
    args.nodes = args.nodes or 20
    args.deadline = 300.0 if args.deadline is None else args.deadline
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
        peer, peer_cpu = direct(args)
        db_facade.dispose()
    print('%d nodes x %d reports x %d instances = %d reports, %d samples'
          % (args.nodes, args.reports, args.instances, reports, samples))
    print('casts sent in %.2f s: %.0f reports/s published'
          % (sent, reports / sent))
    print('through RabbitMQ into MariaDB: %.2f s, %.1f reports/s, '
          '%.0f samples/s ingested' % (elapsed, reports / elapsed,
                                       samples / elapsed))
    print('peer, report_ingest_batch called directly (one thread, no RPC, '
          '%d reports a batch): %.2f s, %.1f reports/s, %.0f samples/s, '
          '%.2f ms of CPU per report'
          % (args.batch, peer, reports / peer, samples / peer,
             1000 * peer_cpu / reports))


if __name__ == '__main__':
    main()
