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

"""A compute API that plays Nova's live migrations, the clock the
migrations run on, and the plans and audits of the executor's tests.

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

from memagg.db import audits as db_audits
from memagg.db import migrations as db_migrations
from memagg.db import reports as db_reports
from memagg.drivers.compute_api import base
from memagg.scheduler import live_migration
from memagg.scheduler import plans
from memagg.scheduler import states


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


def action_states(context, uuid):
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
