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

"""The compute RPC API 1.1 over in-process messaging, and memagg-compute
answering memagg-scheduler's calls back while its own periodic thread
waits on allocate_remote.

memagg-swapd is FakeSwapd (remote_fixtures.py) at the SwapdClient
boundary, and the hypervisor that test's Driver (test:///default cannot
hot-plug). memagg-scheduler is a small RPC endpoint in the test with
SchedulerAPI 1.2's allocate_remote doing what the contract says the
consumer sees: calls to the consumer's memagg-compute (here
get_host_status and attach_grant) before it answers.
"""
import threading

import oslo_messaging as messaging
import pytest

from memagg.common import context
from memagg.common import exceptions
from memagg.compute import manager as compute_manager
from memagg.compute import remote_plan
from memagg.compute import rpcapi as compute_rpcapi
from memagg import service
from memagg.tests import polling
from memagg.tests.unit.compute import remote_fixtures as helpers

VM = helpers.VM
GRANT = helpers.GRANT
SECRET = helpers.SECRET


class Scheduler(service.Manager):
    """allocate_remote calls the consumer back, as the real one does."""

    target = messaging.Target(version='1.2')

    def __init__(self):
        super().__init__('ctl')
        self.compute = compute_rpcapi.ComputeAPI()
        self.reports = []
        self.attached = []
        self.caller = None
        self.periodic_thread = None

    @messaging.expose
    def report(self, ctxt, report):
        self.reports.append(report)

    @messaging.expose
    def allocate_remote(self, ctxt, instance_uuid, consumer_host, size_mb):
        # The thread of the consumer that made this call waits in it now.
        self.periodic_thread = self.caller
        self.compute.get_host_status(ctxt, consumer_host, timeout=10)
        grant = helpers.grant_dict(instance_uuid=instance_uuid,
                                   requested_mb=size_mb, granted_mb=128,
                                   partial=True, reason='test')
        self.attached.append(self.compute.attach_grant(
            ctxt, consumer_host, grant, timeout=10))
        return grant


@pytest.fixture
def node(conf, fake_rpc, sqlite_db, tmp_path):
    conf.config(collect_interval=1, reserved_host_memory_mb=0,
                group='compute')
    conf.config(estimator='stats', group='wss')
    conf.config(report_interval=1)
    conf.config(state_dir=str(tmp_path / 'state'), group='swapd')
    driver = helpers.Driver()
    swapd = helpers.FakeSwapd()
    scheduler = Scheduler()
    manager = compute_manager.ComputeManager(host='node-a', driver=driver,
                                             swapd_client=swapd)
    services = [
        service.Service('memagg-scheduler', conf.conf.scheduler.topic,
                        scheduler),
        service.Service('memagg-compute', compute_rpcapi.TOPIC, manager,
                        host='node-a'),
    ]
    for svc in services:
        svc.start()
    for svc in services:
        assert svc.connected.wait(10)
    yield manager, scheduler, swapd, driver
    for svc in services:
        svc.stop()


def test_endpoints_answer_over_rpc(node):
    manager, _, swapd, _ = node
    api = compute_rpcapi.ComputeAPI()
    ctxt = context.get_admin_context()
    assert api.prepare_slabs(ctxt, 'node-a', GRANT, SECRET, 64, [0, 1, 2],
                             timeout=10) == {
        'endpoint': 'tcp://10.0.0.2:7450',
        'slabs': [{'index': 0, 'remote_addr': 4096, 'rkey': 77},
                  {'index': 1, 'remote_addr': 8192, 'rkey': 77}]}
    assert api.free_slabs(ctxt, 'node-a', GRANT, [2], timeout=10) == {
        'freed': 3}
    assert api.attach_grant(ctxt, 'node-a', helpers.grant_dict(),
                            timeout=10)['serial'] == 'memagg-swap-0b4f7e0c'
    assert api.reclaim_slabs(ctxt, 'node-a', GRANT, timeout=10) == {
        'reclaimed': 2}
    assert ('export_reclaim', GRANT, None) in swapd.calls
    slab = {'index': 1, 'endpoint': 'tcp://10.0.0.3:7450',
            'remote_addr': 8192}
    assert api.promote_slab(ctxt, 'node-a', GRANT, slab, timeout=10) == {
        'pages': 16384}
    assert ('export_promote', GRANT, slab) in swapd.calls


def test_bad_arguments_come_back_as_an_error_naming_the_field(node):
    api = compute_rpcapi.ComputeAPI()
    # RabbitMQ hands a RemoteError over; the fake driver the exception.
    with pytest.raises((messaging.RemoteError,
                        exceptions.InvalidParameter)) as info:
        api.prepare_slabs(context.get_admin_context(), 'node-a', GRANT,
                          'nothex', 64, [0], timeout=10)
    assert 'InvalidParameter' in repr(info.value)
    assert "'secret'" in str(info.value)


def test_attach_grant_is_answered_while_the_period_waits_on_the_scheduler(
        node):
    manager, scheduler, swapd, driver = node
    asked = threading.Event()
    real_act = manager.remote.act

    def act(ctxt):
        # One period finds VM short with no grant (see plan_period's
        # tests): its request is made from the periodic thread.
        if not asked.is_set():
            manager.remote.plan = remote_plan.Plan(
                lendable_mb=0, allocate=[(VM, 1024)])
            scheduler.caller = threading.current_thread().name
            asked.set()
        real_act(ctxt)

    manager.remote.act = act
    polling.wait_for(lambda: scheduler.attached, 20,
                     message='attach_grant answered')
    assert scheduler.periodic_thread == 'memagg-compute-collect'
    assert scheduler.attached == [{
        'socket': '/run/exports/%s.sock' % GRANT,
        'serial': 'memagg-swap-0b4f7e0c', 'target_dev': 'vdb'}]
    assert driver.attached[0][0] == VM
    assert manager.remote.grants_by_instance()[VM].uuid == GRANT
    assert [c for c in swapd.calls if c[0] == 'export_create']
