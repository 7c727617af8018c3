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

"""[scheduler] mode = observe: audits are planned and stored, never
executed; no grant is made.

memagg-scheduler serves RPC on oslo.messaging's fake driver over SQLite,
with test_manager's recording executor (what the manager asks of it) and
the real Executor where its resumption is under test."""
import pytest

from memagg.common import context
from memagg.conf import CONF
from memagg.db import audits as db_audits
from memagg.db import grants as db_grants
from memagg.db import listings as db_listings
from memagg.db import migrations as db_migrations
from memagg.db.sqlalchemy import models
from memagg.scheduler import migration
from memagg.scheduler import reservoir as reservoir_mod
from memagg.scheduler import rpcapi
from memagg.tests import polling
from memagg.tests.unit.db import rows
from memagg.tests.unit.scheduler import test_manager as manager_tests

OBSERVE = '[scheduler] mode = observe'
PLANNING = '55555555-5555-4555-8555-555555555555'
EXECUTING = '66666666-6666-4666-8666-666666666666'


@pytest.fixture
def observing(conf, fake_rpc, sqlite_db, admin_context):
    """memagg-scheduler in observe mode, serving RPC over a cluster whose
    round empties one host."""
    conf.config(interval=0, group='consolidation')
    conf.config(mode='observe', group='scheduler')
    manager_tests._cluster(admin_context)
    executor = manager_tests._Executor()
    with manager_tests.serving(conf, executor) as svc:
        yield svc, executor


def _state(ctxt, uuid):
    return db_audits.audit_get(ctxt, uuid).state


def _planned(ctxt, audit):
    polling.wait_for(lambda: _state(ctxt, audit.uuid) == 'recommended', 10,
                     message='audit %s recommended' % audit.uuid)


def _worker_done(svc, ctxt):
    """Wait for a round queued now: what the worker had before is done."""
    later = db_audits.audit_create(ctxt, {})
    svc.manager.run_audit(ctxt, later.uuid)
    _planned(ctxt, later)


def test_start_leaves_executions_alone(observing):
    _svc, executor = observing
    assert executor.resumed.wait(10)
    assert executor.resumed_executing is False


def test_an_auto_execute_audit_is_planned_and_stays_recommended(
        observing, admin_context):
    svc, executor = observing
    audit = db_audits.audit_create(admin_context, dict(auto_execute=True))

    rpcapi.SchedulerAPI().run_audit(admin_context, audit.uuid)

    _planned(admin_context, audit)
    _worker_done(svc, admin_context)
    stored = db_audits.audit_get(admin_context, audit.uuid)
    assert [(a.action_type, a.source_host, a.dest_host, a.state)
            for a in stored.actions] == [
        ('migrate', 'idle', 'work', 'pending'),
        ('power_off', 'idle', None, 'pending')]
    assert stored.state == 'recommended'
    assert executor.executed == []


def test_a_periodic_auto_execute_round_is_stored_not_executed(
        conf, observing, admin_context):
    svc, executor = observing
    conf.config(auto_execute=True, group='consolidation')

    svc.manager.periodic_round()
    _worker_done(svc, admin_context)

    audits = db_listings.list_resources(admin_context, 'audits')
    assert sorted(a.state for a in audits) == ['recommended'] * 2
    assert executor.executed == []


def test_an_execution_asked_for_fails_the_audit_with_the_reason(
        observing, admin_context):
    svc, executor = observing
    audit = db_audits.audit_create(admin_context, {})
    svc.manager.run_audit(admin_context, audit.uuid)
    _planned(admin_context, audit)
    # As the API of a controller still in manage mode leaves it.
    db_audits.audit_compare_and_set(admin_context, audit.uuid, 'recommended',
                                    'executing')

    rpcapi.SchedulerAPI().execute_audit(admin_context, audit.uuid)

    polling.wait_for(lambda: _state(admin_context, audit.uuid) == 'failed',
                     10, message='audit failed')
    stored = db_audits.audit_get(admin_context, audit.uuid)
    assert OBSERVE in stored.reason
    assert {a.state for a in stored.actions} == {'pending'}
    assert executor.executed == []


def test_a_requested_migration_fails_without_running(observing,
                                                     admin_context):
    svc, executor = observing
    audit_uuid, row = db_migrations.migration_request(
        admin_context, manager_tests.UUIDS[0], 'idle', 'work', 'requested')

    svc.manager.execute_audit(admin_context, audit_uuid)

    polling.wait_for(lambda: _state(admin_context, audit_uuid) == 'failed',
                     10, message='requested migration failed')
    stored = db_migrations.migration_get(admin_context, row.uuid)
    assert stored.status == 'failed' and OBSERVE in stored.error
    assert stored.attempts == 0
    assert executor.executed == []


def test_allocate_remote_is_refused(observing, admin_context):
    with pytest.raises(rpcapi.RemoteMemoryUnavailable) as info:
        rpcapi.SchedulerAPI().allocate_remote(
            admin_context, manager_tests.UUIDS[0], 'idle', 256, timeout=10)
    assert OBSERVE in str(info.value)
    assert db_listings.list_resources(admin_context, 'grants') == []


def test_the_executor_resumes_no_execution(conf, sqlite_db, admin_context):
    rows.insert(models.Audit, dict(uuid=PLANNING, state='planning'),
                dict(uuid=EXECUTING, state='executing'))
    executor = migration.Executor(CONF, compute_api=None)

    executor.resume(context.get_admin_context(), execute=False)

    # A lost round still fails (bookkeeping); the execution is left.
    assert _state(admin_context, PLANNING) == 'failed'
    assert _state(admin_context, EXECUTING) == 'executing'


def test_a_reservation_is_refused_and_stores_nothing(conf, sqlite_db,
                                                     admin_context):
    conf.config(mode='observe', group='scheduler')
    reservoir = reservoir_mod.Reservoir(CONF)
    with pytest.raises(reservoir_mod.RemoteMemoryUnavailable) as info:
        reservoir.reserve(admin_context, manager_tests.UUIDS[0], 'idle', 64)
    assert OBSERVE in str(info.value)
    assert db_listings.list_resources(admin_context, 'grants') == []


def test_a_grant_an_api_reserved_is_failed_not_set_up(conf, sqlite_db,
                                                      admin_context):
    # Reserved by a memagg-api still in manage mode: set up by nothing.
    grant_uuid = '77777777-7777-4777-8777-777777777777'
    rows.insert(models.Grant, dict(uuid=grant_uuid, status='pending',
                                   granted_mb=0, slab_size_mb=64))
    conf.config(mode='observe', group='scheduler')
    # No compute RPC: a call to any host would fail the test.
    reservoir = reservoir_mod.Reservoir(CONF, compute_api=object())

    reservoir.finish_allocation(admin_context, grant_uuid)

    grant = db_grants.grant_get(admin_context, grant_uuid)
    assert grant.status == 'failed'
    assert ('grant %s is not set up: ' % grant_uuid) in grant.reason
    assert OBSERVE in grant.reason
