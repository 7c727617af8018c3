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

"""Coordination of memagg-scheduler workers (memagg.common.coordination)
on tooz's real drivers: Redis and MariaDB (the servers the tests use) and
the file driver; and what the scheduler manager and executor make of it."""
import os

import pytest

from memagg.common import coordination
from memagg.common import exceptions
from memagg.db import audits as db_audits
from memagg.drivers.compute_api import base as compute_api
from memagg.scheduler import manager
from memagg.scheduler import migration
from memagg.tests.functional import service_procs
from memagg.tests import polling

REDIS_URL = os.environ.get('MEMAGG_TEST_REDIS_URL',
                           'redis://127.0.0.1:6379')
MYSQL_URL = os.environ.get('MEMAGG_TEST_TOOZ_MYSQL_URL',
                           'mysql://root@127.0.0.1:3306/mysql')
INTERVAL = 0.2


@pytest.fixture(params=['redis', 'mysql', 'file'])
def backend(request, conf, tmp_path):
    """[coordination] on one real tooz backend; its URL."""
    url = {'redis': REDIS_URL + '?timeout=5', 'mysql': MYSQL_URL,
           'file': 'file://%s' % tmp_path}[request.param]
    conf.config(backend_url=url, election_interval=INTERVAL,
                group='coordination')
    return url


@pytest.fixture
def members(conf, backend, request):
    """A factory of started Coordinators of one namespace, stopped after
    the test."""
    namespace = 'test-%s' % os.urandom(4).hex()
    made = []

    def make():
        member = coordination.Coordinator(conf.conf, namespace)
        made.append(member)
        member.start()
        return member

    yield make
    for member in made:
        member.stop()


def _leaders(members):
    return [m for m in members if m.is_leader()]


def test_without_a_backend_the_worker_leads_and_claims_everything(conf):
    member = coordination.Coordinator(conf.conf, 'topic')
    member.start()
    assert not member.enabled
    assert member.is_leader()
    with member.claim('audit-1') as first, member.claim('audit-1') as again:
        assert (first, again) == (True, True)
    member.stop()


def test_an_unknown_backend_scheme_names_the_option(conf):
    conf.config(backend_url='nosuchdriver://host', group='coordination')
    with pytest.raises(exceptions.InvalidParameter) as raised:
        coordination.Coordinator(conf.conf, 'topic').start()
    assert "'[coordination] backend_url'" in str(raised.value)


def test_one_leader_and_exclusive_claims(members):
    both = make_two(members)
    polling.wait_for(lambda: _leaders(both), 10, message='a leader')
    leader, = _leaders(both)
    other, = set(both) - {leader}
    polling.wait_for(lambda: other._started, 10, message='both joined')
    # The other one has several elections in which to take the lock.
    for _ in range(3):
        other._elect_once()
    assert _leaders(both) == [leader]
    first, second = both
    with first.claim('audit-1') as mine:
        with second.claim('audit-1') as theirs:
            assert (mine, theirs) == (True, False)
        with second.claim('audit-2') as other:
            assert other
    with second.claim('audit-1') as freed:
        assert freed


def test_the_leadership_moves_when_the_leader_leaves(members):
    both = make_two(members)
    polling.wait_for(lambda: _leaders(both), 10, message='a leader')
    leader, = _leaders(both)
    other, = set(both) - {leader}
    polling.wait_for(lambda: other._started, 10, message='both joined')
    leader.stop()
    # Within an election interval (the lock is released on a clean stop).
    assert other.wait_leader(INTERVAL * 5 + 1)
    assert not leader.is_leader()


def make_two(members):
    return members(), members()


def test_an_unreachable_backend_leads_nothing_and_claims_nothing(conf):
    conf.config(backend_url='mysql://root@127.0.0.1:%d/mysql'
                % service_procs.free_port(),
                election_interval=INTERVAL, group='coordination')
    member = coordination.Coordinator(conf.conf, 'topic')
    member.start()
    try:
        assert not member.wait_leader(INTERVAL * 3)
        with member.claim('audit-1') as claimed:
            assert not claimed
    finally:
        member.stop()


def test_long_names_fit_mysql_lock_names(conf):
    member = coordination.Coordinator(conf.conf, 'memagg-scheduler-' + 'x' * 9)
    uuids = ['00000000-0000-4000-8000-%012d' % i for i in range(2)]
    names = {member.lock_name('audit-%s' % u) for u in uuids}
    assert len(names) == 2
    assert max(len(n) for n in names) <= 64


class _NotLeader:
    enabled = True

    def __init__(self):
        self.leader = False

    def is_leader(self):
        return self.leader

    claim = staticmethod(coordination.no_claim)


def test_only_the_leader_runs_the_once_in_the_cluster_jobs(
        conf, sqlite_db, monkeypatch):
    coordinator = _NotLeader()
    mgr = manager.SchedulerManager(host='ctl', coordinator=coordinator)
    ran = []
    monkeypatch.setattr(mgr, 'purge_wss_samples', lambda: ran.append(1))
    conf.config(interval=0, group='consolidation')
    tasks = {t.name: t for t in mgr.periodic_tasks()}
    assert set(tasks) == {'purge-wss-samples', 'recover-orphans'}
    tasks['purge-wss-samples'].func()
    assert ran == []
    coordinator.leader = True
    tasks['purge-wss-samples'].func()
    assert ran == [1]


def test_resume_leaves_an_audit_another_worker_claims(
        members, sqlite_db, admin_context, conf):
    executing = db_audits.audit_create(admin_context,
                                       {'state': 'executing'}).uuid
    planning = db_audits.audit_create(admin_context,
                                      {'state': 'planning'}).uuid
    other, this = make_two(members)
    polling.wait_for(lambda: other._started and this._started, 10,
                     message='both joined')
    executor = migration.Executor(conf.conf, compute_api.load(conf.conf))
    executor.claim = this.claim
    with other.claim('audit-%s' % executing), \
            other.claim('audit-%s' % planning):
        executor.resume(admin_context)
        assert db_audits.audit_get(admin_context, planning).state == \
            'planning'
    executor.resume(admin_context)
    # Once its worker is gone, the planning audit fails; the executing
    # one (no actions) runs to its end.
    assert db_audits.audit_get(admin_context, planning).state == 'failed'
    assert db_audits.audit_get(admin_context, executing).state in (
        'succeeded', 'failed')
