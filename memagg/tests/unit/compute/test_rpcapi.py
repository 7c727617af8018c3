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

"""memagg-compute over in-process RPC: calls answered, reports sent, a
call to a host with no memagg-compute failing with RPCTimeout, and a
report the bus does not take."""
import logging
import time

import oslo_messaging as messaging
import pytest

from memagg.common import context
from memagg.common import exceptions
from memagg.common import rpc
from memagg.compute import manager as compute_manager
from memagg.compute import rpcapi as compute_rpcapi
from memagg.db import hosts as db_hosts
from memagg.db import listings as db_listings
from memagg.objects import base as objects_base
from memagg.scheduler import manager as scheduler_manager
from memagg import service
from memagg.tests import polling

TEST_DOMAIN_UUID = '6695eb01-f6a4-8304-79aa-97f2502e193f'


@pytest.fixture
def services(conf, fake_rpc, sqlite_db, tmp_path):
    conf.config(libvirt_uri='test:///default', collect_interval=1,
                group='compute')
    # No swapd: a path of this test's, never the host's default socket
    # (the host lane's memagg-aio may serve one there meanwhile).
    conf.config(control_socket=str(tmp_path / 'swapd.sock'), group='swapd')
    conf.config(report_interval=1)
    started = [
        service.Service('memagg-scheduler', conf.conf.scheduler.topic,
                        scheduler_manager.SchedulerManager(host='ctl')),
        service.Service('memagg-compute', compute_rpcapi.TOPIC,
                        compute_manager.ComputeManager(host='node-a'),
                        host='node-a'),
    ]
    for svc in started:
        svc.start()
    for svc in started:
        assert svc.connected.wait(10)
    yield started
    for svc in started:
        svc.stop()


def test_compute_answers_ping_and_host_status(services):
    api = compute_rpcapi.ComputeAPI()
    ctxt = context.get_admin_context()
    assert api.ping(ctxt, 'node-a') == {'host': 'node-a',
                                        'binary': 'memagg-compute'}
    status = api.get_host_status(ctxt, 'node-a')
    assert status.host == 'node-a'
    assert TEST_DOMAIN_UUID in [i.uuid for i in status.instances]


class ComputeOnePointZero:
    """A memagg-compute of Compute API 1.0, as during a rolling upgrade."""

    target = messaging.Target(version='1.0')

    @messaging.expose
    def ping(self, ctxt):
        return {'host': 'node-old', 'binary': 'memagg-compute'}

    @messaging.expose
    def get_host_status(self, ctxt):
        return {'host': 'node-old'}


def test_methods_of_1_0_reach_a_compute_of_1_0(services):
    """ping and get_host_status ask for the version they came in, not the
    client's latest: a compute not yet upgraded still answers them."""
    server = rpc.get_server(
        compute_rpcapi.TOPIC, 'node-old', [ComputeOnePointZero()],
        serializer=objects_base.MemaggObjectSerializer())
    server.start()
    try:
        api = compute_rpcapi.ComputeAPI()
        ctxt = context.get_admin_context()
        assert api.ping(ctxt, 'node-old', timeout=10)['host'] == 'node-old'
        assert api.get_host_status(ctxt, 'node-old', timeout=10) == {
            'host': 'node-old'}
    finally:
        server.stop()
        server.wait()


def test_reports_reach_the_database(services, admin_context):
    def stored():
        rows = db_listings.list_resources(admin_context, 'instances',
                                          filters={'host': 'node-a'})
        return [r for r in rows if r.uuid == TEST_DOMAIN_UUID]

    inst = polling.wait_for(stored, 10, message='instance row of node-a')[0]
    # Badis without a sampler: used memory (1024 MiB) + its 64 MiB margin.
    assert (inst.booked_mb, inst.wss_mb) == (8192, 1088)
    assert db_hosts.host_get(admin_context, 'node-a').memory_mb == 3072
    services_rows = polling.wait_for(
        lambda: len(db_listings.list_resources(admin_context, 'services')) == 2
        and db_listings.list_resources(admin_context, 'services'), 10,
        message='two heartbeats')
    assert {(s.host, s.binary) for s in services_rows} == {
        ('ctl', 'memagg-scheduler'), ('node-a', 'memagg-compute')}


def test_call_to_a_host_without_compute_times_out_clearly(services):
    api = compute_rpcapi.ComputeAPI()
    started = time.monotonic()
    with pytest.raises(exceptions.RPCTimeout) as info:
        api.ping(context.get_admin_context(), 'node-nobody', timeout=1)
    assert time.monotonic() - started < 5
    message = str(info.value)
    assert 'memagg-compute.node-nobody' in message
    assert 'ping' in message and '1 s' in message


def test_only_exposed_methods_are_rpc(services):
    client = compute_rpcapi.ComputeAPI().client
    # A public method of the manager that is not part of its RPC API.
    with pytest.raises(Exception) as info:
        client.call(context.get_admin_context(), 'cleanup_host',
                    server='node-a', timeout=5)
    assert 'cleanup_host' in str(info.value)
    assert not isinstance(info.value, exceptions.RPCTimeout)


def test_a_report_the_bus_does_not_take_is_one_warning(conf, tmp_path,
                                                       caplog,
                                                       unreachable_bus):
    # RabbitMQ's URL names a port nothing listens on: the rabbit driver
    # gives the report up after its bounded attempts, as it does whatever
    # the retry once a connection it had to reset stays down past kombu's
    # 5 s connect timeout (CI's RabbitMQ restart in test_chaos_services).
    conf.config(libvirt_uri='test:///default', group='compute')
    conf.config(control_socket=str(tmp_path / 'swapd.sock'), group='swapd')
    rpc.init(conf.conf)
    manager = compute_manager.ComputeManager(host='node-a')
    acted = []
    manager.remote.act = acted.append
    with caplog.at_level(logging.WARNING):
        manager.collect_and_report()
    # One line, no traceback, and the period goes on.
    assert 'Traceback' not in caplog.text
    lines = [r.getMessage() for r in caplog.records
             if r.name == compute_manager.__name__]
    assert len(lines) == 1, caplog.text
    assert lines[0].startswith('Report of node-a not sent: the message bus '
                               'rabbit://127.0.0.1:'), lines
    assert 'did not take memagg.compute.report' in lines[0]
    assert acted == [manager.admin_context]
    assert 0 < sum(unreachable_bus) < 30
