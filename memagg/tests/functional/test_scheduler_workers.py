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

"""Two memagg-scheduler processes on one RPC topic (RabbitMQ, MariaDB),
coordinated through tooz on MariaDB and on Redis: reports are each stored
once and spread over both, a periodic job runs on the leader only, a
SIGKILLed leader's jobs move to the other within the documented bound
(doc/source/scaling.rst), and an execution claimed by a process that is
killed is resumed by the leader."""
import os
import signal
import subprocess
import sys
import time
import uuid

from oslo_utils import timeutils
import pytest
import sqlalchemy as sa

from memagg.common import context
from memagg.common import exceptions
from memagg.common import rpc
from memagg.db import audits as db_audits
from memagg.db import facade as db_facade
from memagg.db.sqlalchemy import models
from memagg.objects import report as report_obj
from memagg.scheduler import rpcapi as scheduler_rpcapi
from memagg.tests.functional import service_procs
from memagg.tests import polling

pytestmark = [pytest.mark.functional, pytest.mark.slow]

REDIS_SERVER = os.environ.get('MEMAGG_TEST_REDIS_URL',
                              'redis://127.0.0.1:6379')
ELECTION_INTERVAL = 0.5
RECOVER_INTERVAL = 1.0
#: Redis lock expiry (tooz's ``timeout``) the Redis variant configures.
REDIS_LOCK_TIMEOUT = 3
#: Seconds a worker's death takes to free its locks, per backend (what
#: scaling.rst documents): MariaDB frees a named lock when the holder's
#: connection closes, which a killed process's does at once.
LOCK_RELEASE = {'mysql': 0, 'redis': REDIS_LOCK_TIMEOUT}
#: Logs are read by polling; the slack covers that and a loaded machine.
SLACK = 3.0
LEADER = 'is now the leader of'
ROUND = 'Periodic job consolidation-round: running it as the leader'
RECOVERY = 'Periodic job recover-orphans: running it as the leader'
STORED = 'Stored the report of '

# A process that claims an audit as a worker would, then waits to be
# killed: the worker that dies while executing it.
HOLDER = '''
import sys, time
from memagg.common import coordination
from memagg.conf import CONF
CONF([], project='memagg', default_config_files=[])
CONF.set_override('backend_url', sys.argv[1], group='coordination')
member = coordination.Coordinator(CONF, sys.argv[2])
member.start()
while not member._started:
    time.sleep(0.05)
with member.claim('audit-' + sys.argv[3]) as claimed:
    print('claimed' if claimed else 'refused', flush=True)
    time.sleep(600)
'''


def _tooz_url(backend, db_url):
    if backend == 'redis':
        return '%s?timeout=%d' % (REDIS_SERVER, REDIS_LOCK_TIMEOUT)
    # The test database's MariaDB server; named locks are server-wide.
    url = sa.engine.make_url(db_url)
    return 'mysql://%s@%s:%s/%s' % (url.username, url.host, url.port or 3306,
                                    url.database)


@pytest.fixture(params=['mysql', 'redis'])
def workers(request, conf, mysql_db, rabbit_url, tmp_path):
    """Two memagg-scheduler processes of one topic; yields (backend, the
    tooz URL, topic, [Process])."""
    run = uuid.uuid4().hex[:10]
    topic = 'memagg-scheduler-%s' % run
    backend_url = _tooz_url(request.param, mysql_db)
    procs = []
    rpc.cleanup()
    conf.config(control_exchange='memagg_test_%s' % run)
    conf.config(topic=topic, report_topic='reports-%s' % run,
                group='scheduler')
    rpc.init(url=rabbit_url)
    try:
        for name in ('a', 'b'):
            config = service_procs.write_config(
                tmp_path / ('%s.conf' % name), {
                    'DEFAULT': {'transport_url': rabbit_url,
                                'control_exchange': 'memagg_test_%s' % run,
                                'host': 'sched-%s-%s' % (name, run),
                                'debug': True},
                    'database': {'connection': mysql_db},
                    'scheduler': {'topic': topic,
                                  'report_topic': 'reports-%s' % run},
                    'consolidation': {'interval': 1},
                    'coordination': {
                        'backend_url': backend_url,
                        'election_interval': ELECTION_INTERVAL,
                        'recover_interval': RECOVER_INTERVAL}})
            procs.append(service_procs.Process(
                'memagg-scheduler', ['--config-file', str(config)],
                tmp_path / ('scheduler-%s.log' % name)))
        yield request.param, backend_url, topic, procs
    finally:
        rpc.cleanup()
        codes = [proc.stop() for proc in procs]
    assert all(code in (0, -signal.SIGKILL) for code in codes), codes


def _count(proc, text):
    return proc.log().count(text)


def _report(host, instances=5):
    now = timeutils.utcnow()
    uuids = [str(uuid.uuid5(uuid.NAMESPACE_DNS, '%s-%d' % (host, i)))
             for i in range(instances)]
    return report_obj.ComputeReport(
        host=host, reported_at=now, memory_mb=65536, reserved_mb=1024,
        vcpus=16, cpu_util=0.2, free_reservoir_mb=0, lendable_mb=0,
        instances=[report_obj.InstanceReport(
            uuid=u, name='vm%d' % i, project_id='p', booked_mb=2048,
            current_mb=2048, target_mb=None, wss_mb=512, wss_maxavg_mb=None,
            estimator='libvirt_stats', cpu_util=0.1)
            for i, u in enumerate(uuids)],
        samples=[report_obj.WssSample(
            instance_uuid=u, sampled_at=now, wss_mb=512, wss_maxavg_mb=None,
            current_mb=2048, target_mb=None, estimator='libvirt_stats')
            for u in uuids])


def _samples():
    with db_facade.get_engine().connect() as conn:
        return conn.execute(sa.select(sa.func.count()).select_from(
            models.WssSample.__table__)).scalar()


def _leader(procs):
    leaders = [p for p in procs if p.alive() and _count(p, LEADER)]
    return leaders[0] if len(leaders) == 1 else None


def _ping(ctxt):
    try:
        return scheduler_rpcapi.SchedulerAPI().ping(ctxt, timeout=2)
    except exceptions.RPCTimeout:
        return None


def test_workers_share_reports_and_the_leader_runs_the_jobs(
        workers, admin_context, tmp_path):
    backend, backend_url, topic, procs = workers
    ctxt = context.get_admin_context()
    polling.wait_for(lambda: all(_count(p, 'serving topic') for p in procs),
                     60, interval=0.2, message='both workers serving')
    assert polling.wait_for(lambda: _ping(ctxt), 30, message='a pong')

    # Reports: each stored once, spread over both workers.
    hosts = ['node-%03d' % i for i in range(60)]
    api = scheduler_rpcapi.SchedulerAPI()
    for host in hosts:
        api.report(ctxt, _report(host))
    polling.wait_for(lambda: _samples() >= len(hosts) * 5, 60, interval=0.2,
                     message='every sample stored')
    assert _samples() == len(hosts) * 5
    stored = [sum(_count(p, STORED + h + ' ') for p in procs)
              for h in hosts]
    assert stored == [1] * len(hosts)
    assert all(_count(p, STORED) for p in procs), [
        _count(p, STORED) for p in procs]

    # The periodic round: only on the leader, which both workers agree on.
    leader = polling.wait_for(lambda: _leader(procs), 30, interval=0.2,
                              message='one leader')
    other, = [p for p in procs if p is not leader]
    polling.wait_for(lambda: _count(leader, ROUND) >= 4, 30, interval=0.2,
                     message='rounds on the leader')
    assert _count(other, ROUND) == 0

    # A process claims an executing audit and is killed: the leader leaves
    # the audit alone while the claim lives, then resumes it (it has no
    # actions: it succeeds).
    audit_uuid = str(uuid.uuid4())
    holder = subprocess.Popen(
        [sys.executable, '-c', HOLDER, backend_url, topic, audit_uuid],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == 'claimed'
        db_audits.audit_create(admin_context, {'uuid': audit_uuid,
                                               'state': 'executing'})
        seen = _count(leader, RECOVERY)
        polling.wait_for(lambda: _count(leader, RECOVERY) >= seen + 2, 30,
                         interval=0.2, message='two recoveries')
        assert db_audits.audit_get(admin_context, audit_uuid).state == \
            'executing'
    finally:
        holder.kill()
        holder.wait()
    polling.wait_for(
        lambda: db_audits.audit_get(admin_context, audit_uuid).state ==
        'succeeded', LOCK_RELEASE[backend] + RECOVER_INTERVAL + SLACK + 30,
        interval=0.2, message='the audit resumed by the leader')

    # SIGKILL the leader: the other takes the jobs over within the bound.
    leader.proc.send_signal(signal.SIGKILL)
    killed = time.monotonic()
    leader.proc.wait()
    polling.wait_for(lambda: _count(other, LEADER), 60, interval=0.1,
                     message='the other worker leading')
    took = time.monotonic() - killed
    bound = LOCK_RELEASE[backend] + ELECTION_INTERVAL
    assert took <= bound + SLACK, (took, bound)
    polling.wait_for(lambda: _count(other, ROUND) >= 2, 30, interval=0.2,
                     message='rounds on the new leader')
    # It serves the reports alone now.
    api.report(ctxt, _report('node-after'))
    polling.wait_for(lambda: _count(other, STORED + 'node-after '), 30,
                     interval=0.2, message='a report after the kill')
    print('%s: leadership moved %.2f s after SIGKILL (bound %.1f s)'
          % (backend, took, bound))
