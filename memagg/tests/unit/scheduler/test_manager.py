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

"""The scheduler manager stores reports, purges old samples, and plans
and executes consolidation audits on its worker while RPC stays
answered."""
import contextlib
import datetime
import threading
import time

from oslo_db import exception as db_exc
from oslo_utils import timeutils
import pytest

from memagg.common import context
from memagg.common import exceptions
from memagg.db import audits as db_audits
from memagg.db import hosts as db_hosts
from memagg.db import listings as db_listings
from memagg.db.sqlalchemy import models
from memagg.objects import report as report_obj
from memagg.scheduler import manager
from memagg.scheduler import rpcapi
from memagg import service
from memagg.tests import polling
from memagg.tests.unit.db import rows

UUIDS = ['00000000-0000-4000-8000-%012d' % i for i in range(3)]


def _report(host, uuids, sampled_at=None):
    now = sampled_at or timeutils.utcnow()
    return report_obj.ComputeReport(
        host=host, reported_at=now, memory_mb=4096, reserved_mb=512, vcpus=4,
        cpu_util=0.1, free_reservoir_mb=100, lendable_mb=0,
        instances=[report_obj.InstanceReport(
            uuid=u, name='vm%d' % i, project_id='p', booked_mb=1024,
            current_mb=1024, target_mb=None, wss_mb=300, wss_maxavg_mb=None,
            estimator='libvirt_stats', cpu_util=0.0)
            for i, u in enumerate(uuids)],
        samples=[report_obj.WssSample(
            instance_uuid=u, sampled_at=now, wss_mb=300, wss_maxavg_mb=None,
            current_mb=1024, target_mb=None, estimator='libvirt_stats')
            for u in uuids])


def _samples(ctxt):
    return db_listings.list_resources(ctxt, 'wss_samples')


def test_report_is_stored(sqlite_db, admin_context):
    mgr = manager.SchedulerManager(host='ctl')
    mgr.report(admin_context, _report('node-a', UUIDS[:2]))
    host = db_hosts.host_get(admin_context, 'node-a')
    assert (host.memory_mb, host.free_reservoir_mb) == (4096, 100)
    assert {i.uuid for i in db_listings.list_resources(
        admin_context, 'instances')} == set(UUIDS[:2])
    assert len(_samples(admin_context)) == 2


def test_report_batch_stores_every_report(sqlite_db, admin_context):
    mgr = manager.SchedulerManager(host='ctl')
    mgr.report_batch(admin_context, [_report('node-a', UUIDS[:1]),
                                     _report('node-b', UUIDS[1:])])
    assert {h.name for h in db_listings.list_resources(
        admin_context, 'hosts')} == {'node-a', 'node-b'}
    assert len(_samples(admin_context)) == 3


def test_report_batch_redelivered_stores_no_sample_twice(
        sqlite_db, admin_context):
    mgr = manager.SchedulerManager(host='ctl')
    batch = [_report('node-a', UUIDS[:1]), _report('node-b', UUIDS[1:])]
    mgr.report_batch(admin_context, batch)

    mgr.report_batch(admin_context, batch)
    mgr.report(admin_context, batch[1])

    assert len(_samples(admin_context)) == 3


def test_purge_drops_samples_past_retention(conf, sqlite_db, admin_context):
    conf.config(sample_retention_hours=1, group='wss')
    mgr = manager.SchedulerManager(host='ctl')
    old = timeutils.utcnow() - datetime.timedelta(hours=2)
    mgr.report(admin_context, _report('node-a', UUIDS[:1], sampled_at=old))
    mgr.report(admin_context, _report('node-a', UUIDS[:1]))
    assert len(_samples(admin_context)) == 2
    mgr.purge_wss_samples()
    remaining = _samples(admin_context)
    assert len(remaining) == 1 and remaining[0].sampled_at > old


@pytest.fixture
def scheduler(conf, fake_rpc, sqlite_db):
    svc = service.Service('memagg-scheduler', conf.conf.scheduler.topic,
                          manager.SchedulerManager(host='ctl'))
    svc.start()
    assert svc.connected.wait(10)
    yield svc
    svc.stop()


def test_rpc_cast_and_call(scheduler, admin_context):
    api = rpcapi.SchedulerAPI()
    ctxt = context.get_admin_context()
    assert api.ping(ctxt) == {'host': 'ctl', 'binary': 'memagg-scheduler'}
    api.report_batch(ctxt, [_report('node-a', UUIDS)])
    polling.wait_for(lambda: len(_samples(admin_context)) == 3, 10,
                     message='3 samples stored')


def test_service_stops_promptly_and_runs_its_periodic_task(
        conf, fake_rpc, sqlite_db):
    ran = []
    mgr = manager.SchedulerManager(host='ctl')
    mgr.periodic_tasks = lambda: [service.PeriodicTask(
        'probe', 3600, lambda: ran.append(1))]
    svc = service.Service('memagg-scheduler', 'memagg-scheduler', mgr)
    svc.start()
    polling.wait_for(lambda: ran, 10, message='periodic task ran')
    started = timeutils.utcnow()
    svc.stop()
    # An interval of an hour must not delay the stop: the loop waits on the
    # stop Event.
    assert (timeutils.utcnow() - started).total_seconds() < 5
    assert ran == [1]


class _Executor:
    """Records what the manager asks of memagg.scheduler.migration's
    Executor; ``gate``, while clear, holds an execution."""

    def __init__(self):
        self.executed = []
        self.resumed = threading.Event()
        self.resumed_executing = None
        self.gate = threading.Event()
        self.gate.set()

    def resume(self, ctxt, execute=True):
        self.resumed_executing = execute
        self.resumed.set()

    def execute(self, ctxt, audit_uuid):
        db_audits.audit_set_state(ctxt, audit_uuid, 'executing',
                                  expected=('recommended',))
        self.executed.append(audit_uuid)
        assert self.gate.wait(30)
        db_audits.audit_set_state(ctxt, audit_uuid, 'succeeded')


def _state(ctxt, uuid):
    return db_audits.audit_get(ctxt, uuid).state


def _cluster(ctxt):
    """An underloaded host and one that can take its VM."""
    mgr = manager.SchedulerManager(host='ctl', executor=_Executor())
    for host, cpu, uuids in (('idle', 0.1, UUIDS[:1]),
                             ('work', 0.6, UUIDS[1:2])):
        report = _report(host, uuids)
        report.cpu_util = cpu
        report.mem_used_mb = 300 if host == 'idle' else 2000
        mgr.report(ctxt, report)


@pytest.fixture
def rounds(conf, fake_rpc, sqlite_db, admin_context):
    """memagg-scheduler serving RPC with a recording executor, over a
    cluster whose round empties one host."""
    conf.config(interval=0, group='consolidation')
    _cluster(admin_context)
    executor = _Executor()
    with serving(conf, executor) as svc:
        yield svc, executor
        executor.gate.set()


@contextlib.contextmanager
def serving(conf, executor):
    """memagg-scheduler serving RPC with ``executor``; stopped on leaving."""
    svc = service.Service('memagg-scheduler', conf.conf.scheduler.topic,
                          manager.SchedulerManager(host='ctl',
                                                   executor=executor))
    svc.start()
    assert svc.connected.wait(10)
    try:
        yield svc
    finally:
        svc.stop()


def test_an_audit_asked_for_is_planned(rounds, admin_context):
    audit = db_audits.audit_create(admin_context, {})

    rpcapi.SchedulerAPI().run_audit(admin_context, audit.uuid)

    polling.wait_for(lambda: _state(admin_context, audit.uuid) ==
                     'recommended', 10, message='audit recommended')
    actions = db_audits.audit_get(admin_context, audit.uuid).actions
    assert [(a.action_type, a.source_host, a.dest_host) for a in actions] \
        == [('migrate', 'idle', 'work'), ('power_off', 'idle', None)]
    assert rounds[1].executed == []


def test_execution_runs_on_the_worker_while_rpc_answers(
        rounds, admin_context):
    _svc, executor = rounds
    executor.gate.clear()
    api = rpcapi.SchedulerAPI()
    audit = db_audits.audit_create(admin_context, dict(auto_execute=True))
    api.run_audit(admin_context, audit.uuid)
    polling.wait_for(lambda: executor.executed == [audit.uuid], 10,
                     message='auto-executed after planning')

    # The execution is held; RPC is still answered.
    assert api.ping(admin_context, timeout=5)['binary'] == 'memagg-scheduler'
    api.report(admin_context, _report('node-c', UUIDS[2:]))
    polling.wait_for(lambda: any(h.name == 'node-c' for h in
                                 db_listings.list_resources(admin_context,
                                                            'hosts')),
                     10, message='report stored during the execution')
    assert _state(admin_context, audit.uuid) == 'executing'

    executor.gate.set()
    polling.wait_for(lambda: _state(admin_context, audit.uuid) ==
                     'succeeded', 10, message='execution ended')


def test_execute_asked_for_twice_runs_once(rounds, admin_context):
    _svc, executor = rounds
    api = rpcapi.SchedulerAPI()
    audit = db_audits.audit_create(admin_context, {})
    api.run_audit(admin_context, audit.uuid)
    polling.wait_for(lambda: _state(admin_context, audit.uuid) ==
                     'recommended', 10, message='audit recommended')

    api.execute_audit(admin_context, audit.uuid)
    api.execute_audit(admin_context, audit.uuid)
    # A round queued behind them shows both executions were taken.
    later = db_audits.audit_create(admin_context, {})
    api.run_audit(admin_context, later.uuid)

    polling.wait_for(lambda: _state(admin_context, later.uuid) ==
                     'recommended', 10, message='later audit planned')
    assert executor.executed == [audit.uuid]
    assert _state(admin_context, audit.uuid) == 'succeeded'


def _audits(ctxt):
    return db_listings.list_resources(ctxt, 'audits')


def test_periodic_rounds_do_not_pile_up(rounds, admin_context):
    svc, executor = rounds
    executor.gate.clear()
    busy = db_audits.audit_create(admin_context, dict(auto_execute=True))
    svc.manager.run_audit(admin_context, busy.uuid)
    polling.wait_for(lambda: executor.executed, 10,
                     message='an execution holding the worker')

    svc.manager.periodic_round()
    svc.manager.periodic_round()
    # A round queued behind them shows what the periodic ones stored.
    later = db_audits.audit_create(admin_context, {})
    svc.manager.run_audit(admin_context, later.uuid)

    executor.gate.set()
    polling.wait_for(lambda: _state(admin_context, later.uuid) ==
                     'recommended', 10, message='later audit planned')
    periodic = [a for a in _audits(admin_context)
                if a.uuid not in (busy.uuid, later.uuid)]
    assert [(a.state, a.memory_basis) for a in periodic] == [
        ('recommended', 'wss')]
    assert len(periodic[0].actions) == 2


def test_periodic_round_auto_executes_its_plan(conf, rounds, admin_context):
    svc, executor = rounds
    conf.config(auto_execute=True, group='consolidation')

    svc.manager.periodic_round()

    polling.wait_for(lambda: executor.executed, 10,
                     message='periodic plan executed')
    assert [a.uuid for a in _audits(admin_context)] == executor.executed


def test_start_resumes_executions_and_plans_pending_audits(
        conf, fake_rpc, sqlite_db, admin_context):
    _cluster(admin_context)
    uuid = '44444444-4444-4444-8444-444444444444'
    rows.insert(models.Audit, dict(uuid=uuid, state='pending'))
    executor = _Executor()
    svc = service.Service('memagg-scheduler', 'memagg-scheduler',
                          manager.SchedulerManager(host='ctl',
                                                   executor=executor))
    svc.start()
    try:
        assert executor.resumed.wait(10)
        polling.wait_for(lambda: _state(admin_context, uuid) ==
                         'recommended', 10, message='pending audit planned')
    finally:
        svc.stop()


def test_periodic_round_task_follows_the_interval(conf, sqlite_db):
    conf.config(interval=0, group='consolidation')
    names = [t.name for t in manager.SchedulerManager(
        host='ctl', executor=_Executor()).periodic_tasks()]
    assert names == ['purge-wss-samples']
    conf.config(interval=300, group='consolidation')
    tasks = manager.SchedulerManager(host='ctl',
                                     executor=_Executor()).periodic_tasks()
    # The first round comes an interval after the start, when the compute
    # nodes have reported; the purge runs at once.
    assert [(t.name, t.interval, t.first_after) for t in tasks] == [
        ('purge-wss-samples', conf.conf.scheduler.purge_interval, 0.0),
        ('consolidation-round', 300, 300)]


def test_a_periodic_task_runs_first_after_its_delay(
        conf, fake_rpc, sqlite_db):
    ran = []
    mgr = manager.SchedulerManager(host='ctl')
    mgr.periodic_tasks = lambda: [service.PeriodicTask(
        'late', 3600, lambda: ran.append(time.monotonic()), first_after=0.3)]
    svc = service.Service('memagg-scheduler', 'memagg-scheduler', mgr)
    started = time.monotonic()
    svc.start()
    try:
        polling.wait_for(lambda: ran, 10, message='the periodic task ran')
    finally:
        svc.stop()
    assert len(ran) == 1 and ran[0] - started >= 0.3


def test_invalid_round_options_fail_at_start(conf, sqlite_db):
    conf.config(overload_cpu='nosuch', group='consolidation')
    with pytest.raises(exceptions.InvalidParameter) as error:
        manager.SchedulerManager(host='ctl', executor=_Executor())
    assert '[consolidation] overload_cpu' in str(error.value)
    assert 'mhod' in str(error.value)


class _OutageJob:
    """A job that finds the database out ``outages`` times, then runs."""

    def __init__(self, outages):
        self.outages = outages
        self.calls = 0
        self.done = threading.Event()

    def __call__(self):
        self.calls += 1
        if self.calls <= self.outages:
            # What oslo.db raises for "Lost connection to MySQL server".
            raise db_exc.DBConnectionError('lost connection')
        self.done.set()


@pytest.fixture
def quick_db_retries(conf):
    conf.config(db_retry_interval=0.01, db_max_retry_interval=0.02,
                db_max_retries=3, group='database')


def _run_then(worker, job):
    """Run ``job`` on ``worker``, then a job that finds the database up:
    the worker went on once that one ran."""
    after = _OutageJob(outages=0)
    worker.start()
    try:
        worker.submit('Releasing grant g', job)
        worker.submit('Releasing grant h', after)
        assert after.done.wait(10)
    finally:
        worker.stop()


def test_the_grants_worker_runs_a_job_again_once_the_database_is_back(
        quick_db_retries):
    job = _OutageJob(outages=2)
    _run_then(manager._Worker('test-grants', db_retry=True), job)
    assert job.done.is_set() and job.calls == 3


def test_a_job_gives_up_after_db_max_retries_and_the_worker_goes_on(
        quick_db_retries):
    job = _OutageJob(outages=10)
    _run_then(manager._Worker('test-grants', db_retry=True), job)
    assert not job.done.is_set() and job.calls == 4


def test_the_rounds_worker_does_not_run_a_job_again(quick_db_retries):
    job = _OutageJob(outages=1)
    _run_then(manager._Worker('test-rounds'), job)
    assert job.calls == 1


def test_stop_ends_a_job_waiting_for_the_database(conf):
    conf.config(db_retry_interval=600, db_max_retries=-1, group='database')
    worker = manager._Worker('test-grants', db_retry=True)
    job = _OutageJob(outages=1)
    worker.start()
    worker.submit('Releasing grant g', job)
    polling.wait_for(lambda: job.calls == 1, 10)
    worker.stop()
    worker._thread.join(10)  # noqa: SLF001 - the worker's own thread
    assert not worker._thread.is_alive() and job.calls == 1  # noqa: SLF001
