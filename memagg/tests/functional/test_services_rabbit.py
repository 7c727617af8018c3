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

"""memagg-scheduler and memagg-compute as real processes on RabbitMQ and
MariaDB: a compute report reaches the DB; a call to a host with no
memagg-compute fails with RPCTimeout, not a hang."""
import signal
import time
import uuid

import pytest

from memagg.common import context
from memagg.common import exceptions
from memagg.common import rpc
from memagg.compute import rpcapi as compute_rpcapi
from memagg.db import hosts as db_hosts
from memagg.db import listings as db_listings
from memagg.scheduler import rpcapi as scheduler_rpcapi
from memagg.tests.functional import service_procs
from memagg.tests import polling

pytestmark = [pytest.mark.functional, pytest.mark.slow]

TEST_DOMAIN_UUID = '6695eb01-f6a4-8304-79aa-97f2502e193f'
RPC_TIMEOUT = 3


@pytest.fixture
def plane(conf, mysql_db, rabbit_url, tmp_path):
    """Both services running; yields (host, [scheduler, compute])."""
    # Names of this test, so that two tests never share a queue.
    run = uuid.uuid4().hex[:10]
    host = 'node-%s' % run
    options = {
        'DEFAULT': {'transport_url': rabbit_url,
                    'control_exchange': 'memagg_test_%s' % run,
                    'rpc_response_timeout': RPC_TIMEOUT,
                    'report_interval': 1, 'host': host},
        'database': {'connection': mysql_db},
        'compute': {'libvirt_uri': 'test:///default',
                    'collect_interval': 1},
        # The balloon stays put: this test follows the report, not sizing.
        'local_policy': {'deadband_mb': 1000000},
        'scheduler': {'topic': 'memagg-scheduler-%s' % run,
                      'report_topic': 'memagg-reports-%s' % run},
        # No swapd: this test's own path, never the host's default socket
        # (the host lane's memagg-aio may serve one there meanwhile).
        'swapd': {'control_socket': tmp_path / 'swapd.sock'},
    }
    config = service_procs.write_config(tmp_path / 'memagg.conf', options)
    # This test process is an RPC client of the same exchange and topics.
    rpc.cleanup()
    conf.config(control_exchange=options['DEFAULT']['control_exchange'],
                rpc_response_timeout=RPC_TIMEOUT)
    conf.config(topic=options['scheduler']['topic'], group='scheduler')
    rpc.init(url=rabbit_url)
    procs = []
    try:
        for name in ('memagg-scheduler', 'memagg-compute'):
            procs.append(service_procs.Process(
                name, ['--config-file', str(config)],
                tmp_path / ('%s.log' % name)))
        yield host, procs
    finally:
        rpc.cleanup()
        codes = service_procs.stop_all(procs)
    assert all(code == 0 for code in codes.values()), codes


def test_compute_report_arrives_in_mariadb(plane, admin_context):
    host_name, procs = plane

    def instance_row():
        for proc in procs:
            assert proc.alive(), proc.log()
        rows = db_listings.list_resources(admin_context, 'instances',
                                          filters={'host': host_name})
        return [r for r in rows if r.uuid == TEST_DOMAIN_UUID]

    inst = polling.wait_for(
        instance_row, 60, interval=0.5,
        message='instance row reported by memagg-compute')[0]
    assert (inst.name, inst.booked_mb, inst.current_mb) == ('test', 8192, 2048)
    # Badis without a sampler: used memory (1024 MiB) + its 64 MiB margin.
    assert (inst.wss_mb, inst.estimator) == (1088, 'badis/V/stats')
    host = db_hosts.host_get(admin_context, host_name)
    assert (host.memory_mb, host.vcpus) == (3072, 16)
    samples = db_listings.list_resources(
        admin_context, 'wss_samples',
        filters={'instance_uuid': TEST_DOMAIN_UUID})
    assert samples and samples[0].host == host_name
    # Host reclaim is off by default: reported so, through RabbitMQ
    # (ComputeReport 1.4) into MariaDB.
    assert (inst.reclaimed_mb, inst.promotion_rate, inst.promotion_slo,
            inst.reclaim_mechanism) == (
        0, None, None,
        'none: host reclaim off ([host_reclaim] controller = none)')
    assert (samples[0].reclaimed_mb, samples[0].promotion_rate) == (0, None)
    binaries = polling.wait_for(
        lambda: {s.binary for s in db_listings.list_resources(
            admin_context, 'services', filters={'host': host_name})} >= {
            'memagg-scheduler', 'memagg-compute'}, 30,
        message='heartbeats of both services')
    assert binaries


def test_calls_answered_and_a_stopped_peer_times_out(plane):
    host_name, procs = plane
    ctxt = context.get_admin_context()
    compute = compute_rpcapi.ComputeAPI()
    # The real processes answer (once they are connected).
    pong = polling.wait_for(lambda: _try(compute.ping, ctxt, host_name), 60,
                            message='memagg-compute answering ping')
    assert pong == {'host': host_name, 'binary': 'memagg-compute'}
    assert polling.wait_for(
        lambda: _try(scheduler_rpcapi.SchedulerAPI().ping, ctxt), 60,
        message='memagg-scheduler answering ping')['binary'] == \
        'memagg-scheduler'

    started = time.monotonic()
    with pytest.raises(exceptions.RPCTimeout) as info:
        compute.ping(ctxt, 'node-that-is-not-running')
    elapsed = time.monotonic() - started
    assert RPC_TIMEOUT - 0.5 <= elapsed < RPC_TIMEOUT + 5
    assert 'memagg-compute.node-that-is-not-running' in str(info.value)
    assert 'within %d s' % RPC_TIMEOUT in str(info.value)

    # A peer that was answering and is stopped: same clear error.
    procs[1].stop()
    with pytest.raises(exceptions.RPCTimeout):
        compute.ping(ctxt, host_name)


def _try(func, *args):
    try:
        return func(*args, timeout=1)
    except exceptions.RPCTimeout:
        return None


def test_guru_meditation_report_and_reload_on_sighup(plane, tmp_path):
    """SIGUSR2: each service writes a Guru Meditation Report to its log;
    SIGHUP: memagg-compute reloads its config file, and ``debug``, a
    mutable option, takes effect without a restart."""
    _host, procs = plane
    for proc in procs:
        # Before its handler is set, SIGUSR2 would end the process.
        polling.wait_for(
            lambda: service_procs.alive(procs)
            and 'connected to the message bus' in proc.log(), 60,
            message='%s serving' % proc.name)
        proc.proc.send_signal(signal.SIGUSR2)
    for proc in procs:
        polling.wait_for(
            lambda: service_procs.alive(procs)
            and 'Guru Meditation' in proc.log()
            and 'product = memagg' in proc.log()
            and 'Threads' in proc.log(), 30,
            message='a Guru Meditation Report from %s' % proc.name)

    compute = next(p for p in procs if p.name == 'memagg-compute')
    assert ' DEBUG ' not in compute.log()
    with open(tmp_path / 'memagg.conf', 'a') as f:
        f.write('[DEFAULT]\ndebug = True\n')
    compute.proc.send_signal(signal.SIGHUP)
    polling.wait_for(lambda: service_procs.alive(procs)
                     and ' DEBUG ' in compute.log(), 30,
                     message='DEBUG lines once debug was reloaded')
    assert 'reloading the configuration files' in compute.log()
