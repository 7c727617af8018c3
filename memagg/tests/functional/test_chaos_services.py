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

"""Chaos on the real services: RabbitMQ restarted, then MariaDB killed and
started again, while memagg-compute reports and a grant is active.

memagg-scheduler, memagg-api and memagg-compute are real processes, never
restarted; RabbitMQ and MariaDB are real servers of this test's own
(private_servers), so their outages touch no other test. memagg-compute
runs on libvirt's test driver (its one domain reports every second); the
hosts that hold the grant are the contract's stand-ins of
test_reservoir_rabbit (RPC servers in this process, on the same RabbitMQ),
as the reservoir test explains.

After each outage: reports resume within 30 s, the scheduler and the API
serve again (a new grant is made and released through them), no grant or
slab record is lost or duplicated, and the instance's WSS history has no
gap but the outages' and no sample twice.
"""
import datetime
import signal
import uuid

from oslo_utils import timeutils
import pytest
import requests
import sqlalchemy as sa

from memagg.common import context
from memagg.common import exceptions
from memagg.common import rpc
from memagg.compute import rpcapi as compute_rpcapi
from memagg.db import facade as db_facade
from memagg.db import grants as db_grants
from memagg.db import migration
from memagg.db import reports as db_reports
from memagg.objects import base as objects_base
from memagg.tests.functional import private_servers
from memagg.tests.functional import service_procs
from memagg.tests.functional import test_reservoir_rabbit as reservoir
from memagg.tests import polling

pytestmark = [pytest.mark.functional, pytest.mark.slow]

TEST_DOMAIN_UUID = '6695eb01-f6a4-8304-79aa-97f2502e193f'
V19 = reservoir.V19
OUTAGE_S = 5
RESUME_S = 30
# Samples come every second; a gap longer than this needs an outage.
CADENCE_SLACK_S = 4
STEADY = 5


@pytest.fixture
def servers(tmp_path):
    """A RabbitMQ node and a MariaDB server of this test's own."""
    rabbit = private_servers.RabbitNode(_made(tmp_path / 'rabbitmq'))
    mariadb = private_servers.MariaDBServer(_made(tmp_path / 'mariadb'))
    try:
        rabbit.start()
        mariadb.start()
        yield rabbit, mariadb
    finally:
        rabbit.stop(signal.SIGKILL)
        mariadb.stop(signal.SIGKILL)


def _made(path):
    path.mkdir()
    return path


@pytest.fixture
def plane(conf, servers, tmp_path, admin_context):
    """memagg's database on the private MariaDB, the grant's stand-in hosts
    reported to it, memagg-scheduler, memagg-api and memagg-compute on the
    private RabbitMQ; yields (servers, api url, compute host, stand-ins,
    processes)."""
    rabbit, mariadb = servers
    run = uuid.uuid4().hex[:10]
    engine = sa.create_engine(mariadb.url + '/', isolation_level='AUTOCOMMIT')
    with engine.connect() as connection:
        connection.execute(sa.text('CREATE DATABASE memagg'))
    engine.dispose()
    connection_url = mariadb.url + '/memagg?charset=utf8mb4'
    conf.config(connection=connection_url, group='database')
    db_facade.dispose()
    migration.upgrade('head')
    now = timeutils.utcnow()
    for name, lendable, vms in (
            ('con', 0, [(reservoir.VM_1, 4096), (reservoir.VM_2, 4096)]),
            ('don-a', 1024, []), ('don-b', 256, [])):
        db_reports.report_ingest(admin_context, dict(
            name=name, memory_mb=16384, vcpus=8, lendable_mb=lendable),
            [dict(uuid=vm, name=vm[:8], booked_mb=booked, current_mb=booked)
             for vm, booked in vms], [], reported_at=now)

    host = 'node-%s' % run
    port = service_procs.free_port()
    options = {
        'DEFAULT': {'transport_url': rabbit.url,
                    'control_exchange': 'memagg_chaos_%s' % run,
                    'report_interval': 1, 'host': host,
                    'service_down_time': 600, 'rpc_response_timeout': 20},
        'database': {'connection': connection_url},
        'api': {'host': '127.0.0.1', 'port': port,
                'auth_strategy': 'noauth'},
        'scheduler': {'topic': 'memagg-scheduler-%s' % run,
                      'report_topic': 'memagg-reports-%s' % run},
        'compute': {'libvirt_uri': 'test:///default',
                    'collect_interval': 1},
        'local_policy': {'deadband_mb': 1000000},
        'consolidation': {'interval': 0},
        'reservoir': {'prepare_timeout': 5},
        # No swapd: this test's own path, never the host's default socket
        # (the host lane's memagg-aio may serve one there meanwhile).
        'swapd': {'control_socket': tmp_path / 'swapd.sock'},
    }
    config = service_procs.write_config(tmp_path / 'memagg.conf', options)
    rpc.cleanup()
    conf.config(control_exchange=options['DEFAULT']['control_exchange'])
    conf.config(topic=options['scheduler']['topic'], group='scheduler')
    rpc.init(url=rabbit.url)
    stand_ins = {'con': reservoir.ComputeStandIn('con'),
                 'don-a': reservoir.ComputeStandIn('don-a', 16),
                 'don-b': reservoir.ComputeStandIn('don-b', 4)}
    rpc_servers, procs = [], []
    try:
        for name, stand_in in stand_ins.items():
            rpc_servers.append(rpc.get_server(
                'memagg-compute', name, [stand_in],
                serializer=objects_base.MemaggObjectSerializer()))
            rpc_servers[-1].start()
        for name in ('memagg-scheduler', 'memagg-api', 'memagg-compute'):
            procs.append(service_procs.Process(
                name, ['--config-file', str(config)],
                tmp_path / ('%s.log' % name)))
        url = 'http://127.0.0.1:%d' % port
        polling.wait_for(lambda: service_procs.alive(procs)
                         and service_procs.scheduler_answers(), 60,
                         message='memagg-scheduler answering')
        polling.wait_for(lambda: service_procs.alive(procs)
                         and service_procs.answers(url + '/'), 60,
                         message='memagg-api answering')
        yield servers, url, host, stand_ins, procs
    finally:
        for server in rpc_servers:
            server.stop()
            server.wait()
        rpc.cleanup()
        codes = service_procs.stop_all(procs)
        db_facade.dispose()
    assert all(code == 0 for code in codes.values()), codes


def _get(url, path, **params):
    """The API's JSON for GET ``path``, or None while it does not answer
    200 (the outage's 503s and refused connections)."""
    try:
        response = requests.get(url + path, headers=V19, params=params,
                                timeout=10)
    except (requests.ConnectionError, requests.Timeout):
        return None
    return response.json() if response.status_code == 200 else None


def _history(url):
    """The test domain's WSS samples' times, oldest first, or None."""
    body = _get(url, '/v1/instances/%s/wss' % TEST_DOMAIN_UUID, limit=1000)
    if body is None:
        return None
    return [timeutils.parse_isotime(s['sampled_at']).timestamp()
            for s in body['wss_samples']]


def _reports_resume(url, procs, since, count=1):
    """Wait until ``count`` samples taken after ``since`` are in the
    history seen through the API; the seconds the first took."""
    first = []

    def resumed():
        service_procs.alive(procs)
        after = [t for t in _history(url) or () if t > since]
        if after and not first:
            first.append(timeutils.utcnow().timestamp())
        return len(after) >= count
    polling.wait_for(resumed, RESUME_S, interval=0.5,
                     message='%d reports taken after %s' % (count, since))
    return first[0] - since


def _records(ctxt, grant_uuid):
    """The grant's slab records as (index, donor, status) tuples, in a
    list: a duplicated record shows as a repeated tuple."""
    db_facade.dispose()
    grant = db_grants.grant_get(ctxt, grant_uuid)
    return grant.status, sorted((s.index, s.donor_host, s.status)
                                for s in grant.slabs)


def _rpc_answers(stand_ins):
    """memagg-scheduler and the stand-in hosts answer a ping again.

    A restarted RabbitMQ has lost the RPC servers' queues; each server
    declares its own again when its connection comes back, 1 to 7 s
    after the broker on oslo.messaging's growing retry intervals. A call
    sent before that is dropped, and the API rightly answers it 503
    ("retry later"): the round trip below is to show the services serve
    again, not to race their reconnection."""
    compute = compute_rpcapi.ComputeAPI()
    ctxt = context.get_admin_context()

    def answers():
        if service_procs.scheduler_answers() is None:
            return False
        for host in stand_ins:
            try:
                compute.ping(ctxt, host, timeout=1)
            except exceptions.RPCTimeout:
                return False
        return True
    polling.wait_for(answers, RESUME_S, interval=0.5,
                     message='memagg-scheduler and the stand-ins answering')


def _grant_round_trip(url, stand_ins, instance_uuid):
    """Make a grant and release it through the API and the scheduler: both
    serve, the donors hold afterwards only what they held before, and the
    release is recorded (its last write done before the next outage)."""
    before = reservoir._held(stand_ins)
    made = requests.post(url + '/v1/grants', headers=V19, timeout=60, json={
        'instance_uuid': instance_uuid, 'size_mb': 256})
    assert made.status_code == 201, made.text
    grant = made.json()['grant']
    assert grant['status'] == 'active', grant
    gone = requests.delete(url + '/v1/grants/' + grant['uuid'], headers=V19,
                           timeout=60)
    assert gone.status_code in (202, 204), gone.text
    polling.wait_for(lambda: reservoir._held(stand_ins) == before, 60,
                     message='the round trip grant released')
    polling.wait_for(
        lambda: (_get(url, '/v1/grants/' + grant['uuid']) or {}).get(
            'grant', {}).get('status') == 'released', 60,
        message='the round trip grant recorded as released')


def test_rabbitmq_and_mariadb_restarts_lose_nothing(plane, admin_context):
    (rabbit, mariadb), url, host, stand_ins, procs = plane
    made = requests.post(url + '/v1/grants', headers=V19, timeout=60, json={
        'instance_uuid': reservoir.VM_1, 'size_mb': 512})
    assert made.status_code == 201, made.text
    grant = made.json()['grant']
    held = reservoir._held(stand_ins)
    records = _records(admin_context, grant['uuid'])
    assert records[0] == 'active' and len(records[1]) == 8, records
    # A steady history before the outages, to tell their gaps apart.
    _reports_resume(url, procs, timeutils.utcnow().timestamp(), STEADY)

    outages = []
    for server, sig in ((rabbit, signal.SIGTERM), (mariadb, signal.SIGKILL)):
        down_at, up_at = private_servers.outage(server, OUTAGE_S, sig)
        outages.append((down_at, up_at))
        took = _reports_resume(url, procs, up_at)
        assert took <= RESUME_S, (server.name, took)
        print('%s down %.1f s: reports resumed %.1f s after it was back'
              % (server.name, up_at - down_at, took))
        service_procs.alive(procs)
        # The scheduler and the API serve again, without a restart.
        _rpc_answers(stand_ins)
        _grant_round_trip(url, stand_ins, reservoir.VM_2)
        assert _records(admin_context, grant['uuid']) == records
        assert reservoir._held(stand_ins) == held
    _reports_resume(url, procs, up_at, STEADY)

    listed = _get(url, '/v1/grants')['grants']
    assert [(g['uuid'], g['status']) for g in listed
            if g['status'] == 'active'] == [(grant['uuid'], 'active')]
    times = _history(url)
    assert len(times) == len(set(times)), 'a sample stored twice'
    gaps = [(a, b) for a, b in zip(times, times[1:])
            if b - a > CADENCE_SLACK_S]
    print('history: %d samples, gaps over %d s: %s' % (
        len(times), CADENCE_SLACK_S, ['%.1f s' % (b - a) for a, b in gaps]))
    for a, b in gaps:
        assert any(a <= up and b >= down for down, up in outages), (
            'a gap of %.1f s at %s outside the outages %s' % (
                b - a, datetime.datetime.fromtimestamp(a), outages))
    assert [p.name for p in procs if p.alive()] == [
        'memagg-scheduler', 'memagg-api', 'memagg-compute']
    # An outage is one line per period in the services' logs, not a
    # traceback each time.
    for proc in procs:
        if proc.name != 'memagg-api':
            assert 'Traceback' not in proc.log(), proc.log()[-6000:]
