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

"""The plan executor against an in-memory compute API, on SQLite.

FakeNova keeps each server's host, status and task state as Nova would
during a live migration: accepted, ``migrating`` for a few looks, then on
the destination (or back on the source, in ERROR, or never ending, as a
test asks). It refuses a migration of a server already migrating, as Nova
does with a 409, and counts what it accepted, so a test sees any
migration started twice.
"""
import collections
import threading
import time

import pytest

from memagg.common import exceptions
from memagg.db import audits as db_audits
from memagg.db import hosts as db_hosts
from memagg.db import migrations as db_migrations
from memagg.db import reports as db_reports
from memagg.drivers.compute_api import base
from memagg.drivers.compute_api import none
from memagg.scheduler import live_migration
from memagg.scheduler import migration
from memagg.scheduler import plans
from memagg.scheduler import states
from memagg.tests import polling

VM = ['00000000-0000-4000-8000-%012d' % i for i in range(12)]
HOSTS = ['h%d' % i for i in range(1, 7)]
NOVA_REASON = ('conductor_live_migrate_instance: No valid host was found. '
               'Unable to move instance to the requested destination')


class FakeNova(base.ComputeApi):
    """Servers that migrate when asked; see the module's docstring.

    ``behaviours`` maps a VM to what its successive live_migrate calls
    do: ``ok``; ``fail`` (accepted, ends back on the source); ``error``
    (accepted, ends in ERROR on the source); ``hang`` (accepted, never
    ends); ``lost`` (accepted, but the answer is lost: Unavailable);
    ``down`` (not accepted: Unavailable); ``refuse`` (400). A
    migration that ends back on its source leaves NOVA_REASON as its
    failure; an aborted one goes back to its source.
    """

    name = 'fake'
    executes_plans = True

    def __init__(self, servers, behaviours=None, polls=2):
        super().__init__(None)
        self.lock = threading.Lock()
        self.servers = {vm: dict(host=host, status='ACTIVE',
                                 task_state=None)
                        for vm, host in servers.items()}
        self.behaviours = {vm: list(b) for vm, b in
                           (behaviours or {}).items()}
        self.polls = polls
        # Cleared, migrations do not end until it is set again.
        self.gate = threading.Event()
        self.gate.set()
        self.moving = {}
        self.calls = []
        self.accepted = collections.Counter()
        self.busy_refusals = 0
        self.in_flight = collections.Counter()
        self.peak = collections.Counter()
        self.peak_total = 0
        self.enabled = {host: True for host in HOSTS}
        self.reasons = {}
        self.service_errors = {}
        self.failures = {}

    def get_qos_weight(self, instance_uuid):
        return base.NO_WEIGHT

    def live_migrate(self, instance_uuid, dest_host):
        with self.lock:
            self.calls.append(('migrate', instance_uuid, dest_host))
            if instance_uuid not in self.servers:
                raise base.InstanceNotFound(instance_uuid)
            if instance_uuid in self.moving:
                self.busy_refusals += 1
                raise base.ComputeApiRefused(
                    'Cannot \'os-migrateLive\' instance while it is in '
                    'task_state migrating', status=409)
            queue = self.behaviours.get(instance_uuid)
            behaviour = queue.pop(0) if queue else 'ok'
            if behaviour == 'refuse':
                raise base.ComputeApiRefused(
                    'No valid host was found. There are not enough hosts '
                    'available.', status=400)
            if behaviour == 'down':
                raise base.ComputeApiUnavailable('Nova: 503 down')
            self._accept(instance_uuid, dest_host, behaviour)
            if behaviour == 'lost':
                raise base.ComputeApiUnavailable('Nova: read timed out')

    def _accept(self, vm, dest, behaviour):
        server = self.servers[vm]
        self.moving[vm] = dict(source=server['host'], dest=dest,
                               outcome=behaviour, polls_left=self.polls,
                               copied=0)
        server.update(status='MIGRATING', task_state='migrating')
        self.accepted[vm] += 1
        for host in (server['host'], dest):
            self.in_flight[host] += 1
            self.peak[host] = max(self.peak[host], self.in_flight[host])
        self.peak_total = max(self.peak_total, len(self.moving))

    def _complete(self, vm):
        move = self.moving.pop(vm)
        for host in (move['source'], move['dest']):
            self.in_flight[host] -= 1
        server = self.servers[vm]
        server['task_state'] = None
        if move['outcome'] in ('ok', 'lost'):
            server.update(host=move['dest'], status='ACTIVE')
        elif move['outcome'] == 'error':
            server['status'] = 'ERROR'
        else:
            server['status'] = 'ACTIVE'
            if move['outcome'] == 'fail':
                self.failures[vm] = NOVA_REASON

    def complete_all(self):
        """End every migration in flight, as Nova does while no scheduler
        looks."""
        with self.lock:
            for vm in [vm for vm, move in self.moving.items()
                       if move['outcome'] != 'hang']:
                self._complete(vm)

    def get_server_state(self, instance_uuid):
        with self.lock:
            if instance_uuid not in self.servers:
                raise base.InstanceNotFound(instance_uuid)
            move = self.moving.get(instance_uuid)
            if move is not None:
                move['polls_left'] -= 1
                move['copied'] += 1 << 20
                if (move['polls_left'] <= 0 and self.gate.is_set()
                        and move['outcome'] != 'hang'):
                    self._complete(instance_uuid)
            server = self.servers[instance_uuid]
            return base.ServerState(status=server['status'],
                                    task_state=server['task_state'],
                                    host=server['host'])

    def get_migration_progress(self, instance_uuid):
        with self.lock:
            move = self.moving.get(instance_uuid)
            if move is None:
                return None
            return base.MigrationProgress('running', move['copied'],
                                          8 << 20)

    def abort_live_migration(self, instance_uuid):
        with self.lock:
            self.calls.append(('abort', instance_uuid))
            move = self.moving.get(instance_uuid)
            if move is None:
                return False
            move['outcome'] = 'aborted'
            self._complete(instance_uuid)
            return True

    def get_migration_failure(self, instance_uuid):
        with self.lock:
            return self.failures.get(instance_uuid)

    def set_host_enabled(self, host, enabled, reason=None):
        with self.lock:
            self.calls.append(('enable' if enabled else 'disable', host,
                               reason))
            errors = self.service_errors.get(host)
            if errors:
                raise errors.pop(0)
            if host not in self.enabled:
                raise base.HostNotFound(host)
            self.enabled[host] = enabled
            self.reasons[host] = reason


class ThreadClock:
    """The migrations' clock in these tests: each thread's own, advanced
    by that thread's sleeps alone, so that a migration's polls and its
    timeout count its own waits, however slowly the machine runs it beside
    other work (a clock scaled from real time once timed a migration out
    after 10 ms of a loaded machine). A sleep still takes a hundredth of
    its time for real, so that a migration held at the fake Nova's gate
    waits at least 6 s before its 600 s timeout."""

    SPEED = 100

    def __init__(self):
        self._now = threading.local()

    def monotonic(self):
        return getattr(self._now, 'value', 0.0)

    def sleep(self, seconds):
        self._now.value = self.monotonic() + seconds
        time.sleep(seconds / self.SPEED)


@pytest.fixture
def options(conf, monkeypatch):
    conf.config(group='consolidation', poll_interval=0.1, max_retries=2,
                migration_timeout=600, max_migrations_per_host=1)
    # poll_interval cannot be set under 0.1 s (a floor for Nova's sake):
    # the migrations run on a clock of their own instead.
    monkeypatch.setattr(live_migration, 'time', ThreadClock())
    return conf


@pytest.fixture
def hosts(sqlite_db, admin_context):
    for host in HOSTS:
        db_reports.report_ingest(admin_context, {'name': host}, [], [])
    return HOSTS


def migrate(vm, source, dest, reason='underload:cpu+memory'):
    return dict(action_type=plans.MIGRATE, reason=reason,
                instance_uuid=vm, source_host=source, dest_host=dest)


def power(action_type, host, reason='underload:cpu+memory'):
    return dict(action_type=action_type, reason=reason, source_host=host)


def make_audit(context, actions, state=states.RECOMMENDED):
    uuid = db_audits.audit_create(context, {'state': 'planning'}).uuid
    db_audits.audit_store_plan(context, uuid, actions, state=state)
    return uuid


def states(context, uuid):
    return [a.state for a in db_audits.audit_get(context, uuid).actions]


def migrations_by_vm(context, uuid):
    return {m.instance_uuid: m for m in
            db_migrations.migrations_of_audit(context, uuid).values()}


# A plan of every kind of action: h4 is woken for VM 2, h1 emptied and
# put on standby.
PLAN = [power(plans.POWER_ON, 'h4', 'overload:memory'),
        migrate(VM[0], 'h1', 'h2'),
        migrate(VM[1], 'h1', 'h3'),
        migrate(VM[2], 'h5', 'h4', 'overload:memory'),
        power(plans.POWER_OFF, 'h1')]
SERVERS = {VM[0]: 'h1', VM[1]: 'h1', VM[2]: 'h5'}


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
    assert states(admin_context, uuid) == ['succeeded'] * 5
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


def test_failed_migrations_are_retried_up_to_max_retries(
        options, hosts, admin_context):
    nova = FakeNova(SERVERS, behaviours={VM[0]: ['fail'] * 5,
                                         VM[1]: ['fail', 'ok'],
                                         VM[2]: ['error']})
    uuid = make_audit(admin_context, PLAN)

    migration.Executor(options.conf, nova).execute(admin_context, uuid)

    rows = migrations_by_vm(admin_context, uuid)
    # 1 + max_retries attempts, then failed with the last attempt's error.
    assert nova.accepted[VM[0]] == 3
    assert (rows[VM[0]].status, rows[VM[0]].attempts) == ('failed', 3)
    assert 'server on h1' in rows[VM[0]].error
    assert NOVA_REASON in rows[VM[0]].error
    assert 'after 3 attempts' in rows[VM[0]].error
    assert (rows[VM[1]].status, rows[VM[1]].attempts) == ('succeeded', 2)
    # The previous attempt's error stays on the row.
    assert 'server on h1' in rows[VM[1]].error
    # A server Nova put in ERROR is not migrated again.
    assert nova.accepted[VM[2]] == 1
    assert rows[VM[2]].status == 'failed'
    assert 'ERROR' in rows[VM[2]].error
    assert states(admin_context, uuid) == [
        'succeeded', 'failed', 'succeeded', 'failed', 'skipped']
    # h1 keeps a VM: it stays powered on.
    assert ('disable', 'h1', 'memagg: consolidated') not in nova.calls
    # Some actions succeeded: the audit is partial, not failed.
    audit = db_audits.audit_get(admin_context, uuid)
    assert audit.state == 'partial'
    assert audit.finished_at is not None
    lines = audit.reason.splitlines()
    assert lines[0] == 'execution: 2 of 5 actions failed, 1 skipped'
    assert any(line.startswith('action 4 (power_off h1) skipped: 1 VM(s)')
               and VM[0] in line for line in lines)
    assert any(line.startswith('action 1 (migrate %s from h1 to h2) '
                               'failed' % VM[0]) for line in lines)


def test_a_refusal_is_not_retried_and_keeps_novas_message(
        options, hosts, admin_context):
    nova = FakeNova(SERVERS, behaviours={VM[0]: ['refuse']})
    uuid = make_audit(admin_context, PLAN[1:2])

    migration.Executor(options.conf, nova).execute(admin_context, uuid)

    row = migrations_by_vm(admin_context, uuid)[VM[0]]
    assert nova.calls == [('migrate', VM[0], 'h2')]
    assert (row.status, row.attempts) == ('failed', 1)
    assert 'No valid host was found' in row.error
    assert db_audits.audit_get(admin_context, uuid).state == 'failed'


def test_unavailable_nova_is_retried_but_an_accepted_call_never_twice(
        options, hosts, admin_context):
    # VM 0: the request never reached Nova; VM 1: Nova accepted it but
    # its answer was lost.
    nova = FakeNova(SERVERS, behaviours={VM[0]: ['down'],
                                         VM[1]: ['lost']})
    uuid = make_audit(admin_context, PLAN[1:3])

    migration.Executor(options.conf, nova).execute(admin_context, uuid)

    rows = migrations_by_vm(admin_context, uuid)
    assert [c for c in nova.calls if c[1] == VM[0]] == [
        ('migrate', VM[0], 'h2')] * 2
    assert (rows[VM[0]].status, rows[VM[0]].attempts) == ('succeeded', 2)
    assert [c for c in nova.calls if c[1] == VM[1]] == [
        ('migrate', VM[1], 'h3')]
    assert (rows[VM[1]].status, rows[VM[1]].attempts) == ('succeeded', 1)
    assert nova.busy_refusals == 0
    assert db_audits.audit_get(admin_context, uuid).state == 'succeeded'


def test_a_migration_past_the_timeout_fails_without_a_retry(
        options, hosts, admin_context):
    options.config(migration_timeout=1, group='consolidation')
    nova = FakeNova(SERVERS, behaviours={VM[0]: ['hang']})
    uuid = make_audit(admin_context, PLAN[1:3])

    migration.Executor(options.conf, nova).execute(admin_context, uuid)

    rows = migrations_by_vm(admin_context, uuid)
    assert nova.accepted[VM[0]] == 1
    assert ('abort', VM[0]) in nova.calls
    assert (rows[VM[0]].status, rows[VM[0]].attempts) == ('failed', 1)
    assert 'migration_timeout' in rows[VM[0]].error
    assert 'aborted through Nova' in rows[VM[0]].error
    assert 'the server is on h1' in rows[VM[0]].error
    assert nova.servers[VM[0]]['host'] == 'h1'
    assert 1 <= rows[VM[0]].duration_s < 10
    assert rows[VM[1]].status == 'succeeded'
    assert db_audits.audit_get(admin_context, uuid).state == 'partial'


def test_a_host_that_was_not_woken_receives_no_vm(options, hosts,
                                                  admin_context):
    nova = FakeNova(SERVERS)
    nova.service_errors['h4'] = [base.ComputeApiRefused(
        'Nova refused to enable the nova-compute service of host h4 (400)',
        status=400)]
    uuid = make_audit(admin_context, PLAN)

    migration.Executor(options.conf, nova).execute(admin_context, uuid)

    assert ('migrate', VM[2], 'h4') not in nova.calls
    assert states(admin_context, uuid) == [
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
    assert states(admin_context, uuid)[-1] == 'failed'
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
    assert states(admin_context, uuid) == ['succeeded'] * 5
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
