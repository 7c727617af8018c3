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

"""The plan executor (memagg.scheduler.migration) against
migration_fixtures.FakeNova, on SQLite: the order of a plan's actions, the
limits per host, the hosts woken and put on standby, and a run resumed
after a crash at any write. One migration's attempts are in
test_live_migration."""
import collections
import threading

import pytest

from memagg.common import exceptions
from memagg.db import audits as db_audits
from memagg.db import hosts as db_hosts
from memagg.db import migrations as db_migrations
from memagg.drivers.compute_api import base
from memagg.drivers.compute_api import none
from memagg.scheduler import migration
from memagg.tests import polling
from memagg.tests.unit.scheduler.migration_fixtures import (
    FakeNova, PLAN, SERVERS, VM, action_states, make_audit, migrate,
    migrations_by_vm)


def test_plan_runs_power_on_then_migrations_then_power_off(
        options, hosts, admin_context):
    nova = FakeNova(SERVERS)
    nova.enabled['h4'] = False
    uuid = make_audit(admin_context, PLAN)

    migration.Executor(options.conf, nova).execute(admin_context, uuid)

    kinds = [call[0] for call in nova.calls]
    assert kinds[0] == 'enable' and kinds[-1] == 'disable'
    assert sorted(kinds[1:-1]) == ['migrate'] * 3
    assert nova.calls[-1] == ('disable', 'h1', 'memagg: consolidated')
    assert nova.enabled['h4'] and not nova.enabled['h1']
    assert {vm: s['host'] for vm, s in nova.servers.items()} == {
        VM[0]: 'h2', VM[1]: 'h3', VM[2]: 'h4'}
    audit = db_audits.audit_get(admin_context, uuid)
    assert (audit.state, audit.reason) == ('succeeded', None)
    assert audit.finished_at is not None
    assert action_states(admin_context, uuid) == ['succeeded'] * 5
    assert db_hosts.host_get(admin_context, 'h1').state == 'standby'
    assert db_hosts.host_get(admin_context, 'h4').state == 'active'
    rows = migrations_by_vm(admin_context, uuid)
    assert {vm: (m.status, m.attempts, m.source_host, m.dest_host)
            for vm, m in rows.items()} == {
        VM[0]: ('succeeded', 1, 'h1', 'h2'),
        VM[1]: ('succeeded', 1, 'h1', 'h3'),
        VM[2]: ('succeeded', 1, 'h5', 'h4')}
    for row in rows.values():
        assert row.duration_s > 0 and row.error is None
        # The bytes Nova reported while the migration ran.
        assert row.bytes_transferred == 1 << 20
        assert row.audit_action_id is not None


def _wide_plan():
    """Migrations between h1..h4 in both directions, three per pair."""
    plan, servers = [], {}
    pairs = [('h1', 'h2'), ('h3', 'h4'), ('h1', 'h4'), ('h3', 'h2')] * 3
    for vm, (source, dest) in zip(VM, pairs):
        plan.append(migrate(vm, source, dest))
        servers[vm] = source
    return plan, servers


@pytest.mark.parametrize('limit, concurrent', [(1, 2), (2, 4)])
def test_per_host_limit_is_never_exceeded_and_hosts_run_in_parallel(
        options, hosts, admin_context, limit, concurrent):
    options.config(max_migrations_per_host=limit, group='consolidation')
    plan, servers = _wide_plan()
    nova = FakeNova(servers, polls=1)
    nova.gate.clear()
    uuid = make_audit(admin_context, plan)
    executor = migration.Executor(options.conf, nova)
    thread = threading.Thread(target=executor.execute,
                              args=(admin_context, uuid))
    thread.start()
    try:
        # With the migrations held, as many run as the limit allows
        # across the four hosts, and no more.
        polling.wait_for(lambda: len(nova.moving) == concurrent, 30,
                         message='%d migrations in flight' % concurrent)
    finally:
        nova.gate.set()
        thread.join(60)
    assert not thread.is_alive()
    assert nova.peak_total == concurrent
    assert max(nova.peak.values()) == limit
    assert db_audits.audit_get(admin_context, uuid).state == 'succeeded'
    assert nova.accepted == collections.Counter(
        {vm: 1 for vm in servers})


def test_a_host_that_was_not_woken_receives_no_vm(options, hosts,
                                                  admin_context):
    nova = FakeNova(SERVERS)
    nova.service_errors['h4'] = [base.ComputeApiRefused(
        'Nova refused to enable the nova-compute service of host h4 (400)',
        status=400)]
    uuid = make_audit(admin_context, PLAN)

    migration.Executor(options.conf, nova).execute(admin_context, uuid)

    assert ('migrate', VM[2], 'h4') not in nova.calls
    assert action_states(admin_context, uuid) == [
        'failed', 'succeeded', 'succeeded', 'skipped', 'succeeded']
    reason = db_audits.audit_get(admin_context, uuid).reason
    assert 'action 0 (power_on h4) failed: Nova refused' in reason
    assert 'destination h4 was not powered on' in reason
    assert VM[2] not in migrations_by_vm(admin_context, uuid)


def test_an_unavailable_service_api_is_retried_within_bounds(
        options, hosts, admin_context):
    nova = FakeNova(SERVERS)
    nova.service_errors['h1'] = [base.ComputeApiUnavailable('Nova: 503')] * 3
    uuid = make_audit(admin_context, PLAN[1:3] + PLAN[4:])

    migration.Executor(options.conf, nova).execute(admin_context, uuid)

    assert [c for c in nova.calls if c[0] == 'disable'] == [
        ('disable', 'h1', 'memagg: consolidated')] * 3
    assert action_states(admin_context, uuid)[-1] == 'failed'
    assert 'after 3 attempts' in db_audits.audit_get(admin_context,
                                                     uuid).reason
    assert db_hosts.host_get(admin_context, 'h1').state == 'active'


def test_the_none_driver_fails_the_plan_at_once_naming_the_option(
        options, hosts, admin_context):
    uuid = make_audit(admin_context, PLAN)

    migration.Executor(options.conf, none.NoComputeApi(options.conf)) \
        .execute(admin_context, uuid)

    audit = db_audits.audit_get(admin_context, uuid)
    assert audit.state == 'failed'
    assert 'compute_api_driver = nova' in audit.reason
    # Not retried: the driver cannot migrate whatever happens.
    assert {m.attempts for m in migrations_by_vm(
        admin_context, uuid).values()} == {1}


def test_only_a_recommended_audit_is_executed(options, hosts,
                                              admin_context):
    uuid = make_audit(admin_context, PLAN, state='failed')
    with pytest.raises(exceptions.Conflict):
        migration.Executor(options.conf, FakeNova(SERVERS)).execute(
            admin_context, uuid)
    assert db_audits.audit_get(admin_context, uuid).state == 'failed'


def test_an_audit_the_api_made_executing_is_executed_once(
        options, hosts, admin_context):
    nova = FakeNova(SERVERS)
    nova.enabled['h4'] = False
    uuid = make_audit(admin_context, PLAN)
    db_audits.audit_compare_and_set(admin_context, uuid, 'recommended',
                                    'executing')
    executor = migration.Executor(options.conf, nova)

    executor.execute(admin_context, uuid)
    # A second cast of the same request finds it done.
    with pytest.raises(exceptions.Conflict):
        executor.execute(admin_context, uuid)

    assert db_audits.audit_get(admin_context, uuid).state == 'succeeded'
    assert sorted(call[0] for call in nova.calls) == [
        'disable', 'enable', 'migrate', 'migrate', 'migrate']


def test_resume_fails_audits_left_planning(options, hosts, admin_context):
    uuid = db_audits.audit_create(admin_context, {'state': 'planning'}).uuid
    migration.Executor(options.conf, FakeNova({})).resume(admin_context)
    audit = db_audits.audit_get(admin_context, uuid)
    assert (audit.state, audit.reason) == (
        'failed', 'memagg-scheduler restarted while planning')


class Crash(Exception):
    """The scheduler died: nothing more reaches the DB or Nova."""


# What the executor writes, each a point where it can be stopped.
_WRITES = {db_audits: ('audit_set_state', 'audit_action_set_state'),
           db_migrations: ('migration_queue', 'migration_start_attempt',
                           'migration_attempt_failed', 'migration_finish'),
           db_hosts: ('host_set_state',)}
_NOVA_CALLS = ('live_migrate', 'get_server_state', 'get_migration_progress',
               'set_host_enabled')


def _crash_after(monkeypatch, nova, writes=None):
    """Stop the scheduler once it has made ``writes`` DB writes: from the
    next write on, every DB write and every call to ``nova`` raises Crash
    (threads still running die at their next step). Returns the list of
    the writes made."""
    done = []
    dead = threading.Event()

    def guard(real, name):
        def call(*args, **kwargs):
            if dead.is_set():
                raise Crash(name)
            if any(name in names for names in _WRITES.values()):
                if writes is not None and len(done) >= writes:
                    dead.set()
                    raise Crash(name)
                done.append(name)
            return real(*args, **kwargs)
        return call

    for module, names in _WRITES.items():
        for name in names:
            monkeypatch.setattr(module, name,
                                guard(getattr(module, name), name))
    for name in _NOVA_CALLS:
        monkeypatch.setattr(nova, name, guard(getattr(nova, name), name))
    return done


# VM 1's first attempt ends back on its source, so a retry is among the
# states a stop can leave.
_RESUME_BEHAVIOURS = {VM[1]: ['fail', 'ok']}
# The DB writes of PLAN's uninterrupted run with those behaviours: the
# audit twice, each power action three times (running, host, succeeded),
# each migration queued, started per attempt (4) and finished, and one
# failed attempt.
_PLAN_WRITES = 2 + 2 * 3 + 3 + 4 + 3 + 1


def _resume_nova():
    nova = FakeNova(SERVERS, behaviours=_RESUME_BEHAVIOURS, polls=2)
    nova.enabled['h4'] = False
    return nova


def test_the_run_resumed_below_makes_the_writes_counted(
        options, hosts, admin_context, monkeypatch):
    nova = _resume_nova()
    uuid = make_audit(admin_context, PLAN)
    done = _crash_after(monkeypatch, nova)
    migration.Executor(options.conf, nova).execute(admin_context, uuid)
    assert len(done) == _PLAN_WRITES
    assert db_audits.audit_get(admin_context, uuid).state == 'succeeded'


@pytest.mark.slow
@pytest.mark.parametrize('nova_meanwhile', ['still migrating',
                                            'migrations ended'])
@pytest.mark.parametrize('writes', range(1, _PLAN_WRITES))
def test_resume_finishes_a_plan_stopped_after_any_write(
        options, hosts, admin_context, monkeypatch, writes,
        nova_meanwhile):
    """The scheduler stops after ``writes`` DB writes (the first moves the
    audit to executing); while it is down Nova keeps its migrations in
    flight or ends them. resume() finishes the plan and no migration is
    started twice."""
    nova = _resume_nova()
    uuid = make_audit(admin_context, PLAN)
    _crash_after(monkeypatch, nova, writes)
    with pytest.raises(Crash):
        migration.Executor(options.conf, nova).execute(admin_context, uuid)
    monkeypatch.undo()
    assert db_audits.audit_get(admin_context, uuid).state == 'executing'
    if nova_meanwhile == 'migrations ended':
        nova.complete_all()

    migration.Executor(options.conf, nova).resume(admin_context)

    audit = db_audits.audit_get(admin_context, uuid)
    assert (audit.state, audit.reason) == ('succeeded', None)
    assert action_states(admin_context, uuid) == ['succeeded'] * 5
    assert {vm: s['host'] for vm, s in nova.servers.items()} == {
        VM[0]: 'h2', VM[1]: 'h3', VM[2]: 'h4'}
    assert nova.enabled['h4'] and not nova.enabled['h1']
    # Each migration was asked of Nova once per attempt it needed, never
    # while one was running.
    assert nova.busy_refusals == 0
    assert nova.accepted == {VM[0]: 1, VM[1]: 2, VM[2]: 1}
    rows = migrations_by_vm(admin_context, uuid)
    assert {m.status for m in rows.values()} == {'succeeded'}
    assert db_hosts.host_get(admin_context, 'h1').state == 'standby'


def _stopped_between_write_and_call(admin_context, nova, attempts):
    """An audit whose VM 0 migration the DB says is running (attempt
    ``attempts``), Nova having never received it."""
    uuid = make_audit(admin_context, PLAN[1:2], state='executing')
    action = db_audits.audit_get(admin_context, uuid).actions[0]
    row = db_migrations.migration_queue(admin_context, action.id)
    for _ in range(attempts):
        db_migrations.migration_start_attempt(admin_context, row.id)
    return uuid


def test_resume_retries_an_attempt_nova_never_received(
        options, hosts, admin_context):
    nova = FakeNova(SERVERS)
    uuid = _stopped_between_write_and_call(admin_context, nova, 1)

    migration.Executor(options.conf, nova).resume(admin_context)

    row = migrations_by_vm(admin_context, uuid)[VM[0]]
    assert (row.status, row.attempts) == ('succeeded', 2)
    assert 'after memagg-scheduler restarted' in row.error
    assert nova.accepted[VM[0]] == 1
    assert db_audits.audit_get(admin_context, uuid).state == 'succeeded'


def test_resume_fails_a_migration_whose_attempts_are_spent(
        options, hosts, admin_context):
    options.config(max_retries=0, group='consolidation')
    nova = FakeNova(SERVERS)
    uuid = _stopped_between_write_and_call(admin_context, nova, 1)

    migration.Executor(options.conf, nova).resume(admin_context)

    row = migrations_by_vm(admin_context, uuid)[VM[0]]
    assert (row.status, row.attempts) == ('failed', 1)
    # When the attempt ended is unknown: no duration is made up.
    assert row.duration_s is None
    assert nova.calls == []
    audit = db_audits.audit_get(admin_context, uuid)
    assert audit.state == 'failed'
    assert 'after 1 attempts' in audit.reason
