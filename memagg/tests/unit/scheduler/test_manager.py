"""The scheduler manager stores reports and purges old WSS samples."""
import datetime

from oslo_utils import timeutils
import pytest

from memagg.common import context
from memagg.db import api as db_api
from memagg.objects import report as report_obj
from memagg.scheduler import manager
from memagg.scheduler import rpcapi
from memagg import service
from memagg.tests import polling

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
    return db_api.list_resources(ctxt, 'wss_samples')


def test_report_is_stored(sqlite_db, admin_context):
    mgr = manager.SchedulerManager(host='ctl')
    mgr.report(admin_context, _report('node-a', UUIDS[:2]))
    host = db_api.host_get(admin_context, 'node-a')
    assert (host.memory_mb, host.free_reservoir_mb) == (4096, 100)
    assert {i.uuid for i in db_api.list_resources(
        admin_context, 'instances')} == set(UUIDS[:2])
    assert len(_samples(admin_context)) == 2


def test_report_batch_stores_every_report(sqlite_db, admin_context):
    mgr = manager.SchedulerManager(host='ctl')
    mgr.report_batch(admin_context, [_report('node-a', UUIDS[:1]),
                                     _report('node-b', UUIDS[1:])])
    assert {h.name for h in db_api.list_resources(admin_context, 'hosts')} \
        == {'node-a', 'node-b'}
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
