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

"""Executing a consolidation plan through Nova: memagg's Executor and its
nova compute API driver (openstacksdk) against a Nova double.

The real Nova of memagg/tests/nova_functional executes, refuses and aborts
plans; these tests cover what it cannot (Keystone's catalog, an old Nova, a
killed executor, transient answers on demand: see
memagg.tests.functional.nova_double), so they serve a Nova compute API
double over real HTTP on loopback (memagg.tests.functional.nova_double)
whose request validation uses Nova's own JSON schemas, imported from the
installed ``nova`` package (in a child interpreter:
memagg.tests.functional.nova_contract) and applied for each request's
microversion exactly as Nova's controllers apply them:

* every os-migrateLive body memagg sends is validated with
  nova/api/openstack/compute/schemas/migrate_server.py (``migrate_live*``,
  as MigrateServerController._migrate_live picks it for the microversion);
* every os-services query and update body with schemas/services.py;
* every GET /servers/{id} response the double sends with schemas/
  servers.py's show response schema, and every GET /servers/{id}/
  migrations response with schemas/server_migrations.py.

A request real Nova would reject, or a response it could not send, fails
the test (the double keeps them in ``violations``). openstacksdk
authenticates against the real Keystone of the ``keystone`` fixture and
finds the double through Keystone's catalog; the double accepts only
tokens Keystone confirms.
"""
import os
import signal
import subprocess
import sys
import uuid

import pytest
import requests

from memagg.conf import consolidation as consolidation_conf
from memagg.db import audits as db_audits
from memagg.db import hosts as db_hosts
from memagg.db import migrations as db_migrations
from memagg.db import reports as db_reports
from memagg.drivers.compute_api import base
from memagg.scheduler import migration
from memagg.scheduler import plans
from memagg.scheduler import states
from memagg.tests.functional import nova_catalog
from memagg.tests.functional import nova_contract
from memagg.tests.functional import nova_double
from memagg.tests.functional import service_procs
from memagg.tests import polling

pytestmark = [pytest.mark.functional, pytest.mark.slow]


VM_A, VM_B, VM_C = (str(uuid.uuid4()) for _ in range(3))
HOSTS = ['h1', 'h2', 'h3', 'h4', 'h5']
# Wake h4 for VM C, empty h1 and put it on standby.
PLAN = [
    dict(action_type=plans.POWER_ON, source_host='h4',
         reason='overload:memory'),
    dict(action_type=plans.MIGRATE, instance_uuid=VM_A,
         source_host='h1', dest_host='h2', reason='underload:cpu+memory'),
    dict(action_type=plans.MIGRATE, instance_uuid=VM_B,
         source_host='h1', dest_host='h3', reason='underload:cpu+memory'),
    dict(action_type=plans.MIGRATE, instance_uuid=VM_C,
         source_host='h5', dest_host='h4', reason='overload:memory'),
    dict(action_type=plans.POWER_OFF, source_host='h1',
         reason='underload:cpu+memory'),
]
DESTINATIONS = {VM_A: 'h2', VM_B: 'h3', VM_C: 'h4'}
CONSOLIDATION = dict(poll_interval=0.1, max_retries=2, migration_timeout=60,
                     max_migrations_per_host=1)


@pytest.fixture(scope='module')
def contract():
    return nova_contract.load_contract()


@pytest.fixture
def double(keystone, contract):
    """A Nova double with VMs A and B on h1 and C on h5, h4's compute
    service disabled (on standby), registered in Keystone's catalog."""
    project_id, user_id = nova_catalog.admin_ids(keystone)
    nova = nova_double.NovaDouble(keystone, contract, project_id, user_id)
    for host in HOSTS:
        nova.add_service(host)
    nova.add_service('h4', status='disabled',
                     disabled_reason=migration.STANDBY_REASON)
    for server_id, host in ((VM_A, 'h1'), (VM_B, 'h1'), (VM_C, 'h5')):
        nova.add_server(server_id, host)
    try:
        with nova_catalog.in_catalog(keystone, [
                ('compute', 'nova', nova.compute_url)]):
            yield nova
    finally:
        nova.close()


@pytest.fixture
def exec_conf(monkeypatch, keystone):
    conf = nova_catalog.nova_conf(monkeypatch, keystone,
                                  (consolidation_conf,))
    for name, value in CONSOLIDATION.items():
        conf.set_override(name, value, group='consolidation')
    return conf


@pytest.fixture
def audit(sqlite_db, admin_context):
    """A recommended audit of PLAN, the hosts known to memagg."""
    for host in HOSTS:
        db_reports.report_ingest(admin_context, {'name': host}, [], [])
    db_hosts.host_set_state(admin_context, 'h4', states.STANDBY)
    uuid_ = db_audits.audit_create(admin_context, {'state': 'planning'}).uuid
    db_audits.audit_store_plan(admin_context, uuid_, PLAN)
    return uuid_


def _migrations(context, audit_uuid):
    return {m.instance_uuid: m for m in
            db_migrations.migrations_of_audit(context, audit_uuid).values()}


def _hosts(double):
    return {server_id: server.host
            for server_id, server in double.servers.items()}


def test_a_plan_is_executed_through_nova(double, exec_conf, audit,
                                         admin_context):
    executor = migration.Executor(exec_conf, base.load(exec_conf))
    executor.execute(admin_context, audit)

    assert double.violations == []
    row = db_audits.audit_get(admin_context, audit)
    assert (row.state, row.reason) == ('succeeded', None)
    assert [a.state for a in row.actions] == ['succeeded'] * 5
    assert _hosts(double) == DESTINATIONS
    # Live migrations at 2.30: a named destination that Nova's scheduler
    # still checks (no force), block migration left to Nova.
    assert sorted(double.actions) == sorted(
        (vm, '2.30', {'os-migrateLive': {'host': dest,
                                         'block_migration': 'auto'}})
        for vm, dest in DESTINATIONS.items())
    assert double.accepted == {VM_A: 1, VM_B: 1, VM_C: 1}
    # The services, named by id at 2.53 or later.
    updates = [(body, nova_contract.version(at) >= (2, 53))
               for _, at, body in double.service_updates]
    assert updates == [
        ({'status': 'enabled'}, True),
        ({'status': 'disabled',
          'disabled_reason': migration.STANDBY_REASON}, True)]
    assert (double.services['h4'].status, double.services['h1'].status,
            double.services['h1'].disabled_reason) == (
        'enabled', 'disabled', 'memagg: consolidated')
    assert db_hosts.host_get(admin_context, 'h1').state == 'standby'
    assert db_hosts.host_get(admin_context, 'h4').state == 'active'
    for vm, row in _migrations(admin_context, audit).items():
        assert (row.status, row.attempts, row.dest_host) == (
            'succeeded', 1, DESTINATIONS[vm])
        # Read from GET /servers/{id}/migrations while it ran.
        assert 0 < row.bytes_transferred <= nova_double.MIGRATION_TOTAL_BYTES
        assert row.duration_s > 0
    # Servers were shown at one microversion negotiated by openstacksdk
    # (its newest known to both sides).
    assert len(double.served_versions) == 1
    assert double.served_versions.pop() >= (2, 53)


def test_nova_refusals_and_failures_end_or_retry_actions(
        double, exec_conf, audit, admin_context):
    double.behaviours[VM_A] = [nova_double.CONFLICT]
    double.behaviours[VM_B] = [nova_double.FAIL, nova_double.SUCCEED]
    double.behaviours[VM_C] = [nova_double.NO_VALID_HOST]
    executor = migration.Executor(exec_conf, base.load(exec_conf))
    executor.execute(admin_context, audit)

    assert double.violations == []
    rows = _migrations(admin_context, audit)
    # Refused: not asked again, Nova's message kept.
    assert (rows[VM_A].status, rows[VM_A].attempts) == ('failed', 1)
    assert '(409)' in rows[VM_A].error and 'is locked' in rows[VM_A].error
    assert (rows[VM_C].status, rows[VM_C].attempts) == ('failed', 1)
    assert '(400)' in rows[VM_C].error
    assert 'No valid host was found' in rows[VM_C].error
    # Back on its source after the first attempt: tried again.
    assert (rows[VM_B].status, rows[VM_B].attempts) == ('succeeded', 2)
    assert double.accepted == {VM_B: 2}
    assert _hosts(double) == {VM_A: 'h1', VM_B: 'h3', VM_C: 'h5'}
    # VM A stays on h1, so h1 stays in service.
    assert double.services['h1'].status == 'enabled'
    row = db_audits.audit_get(admin_context, audit)
    assert [a.state for a in row.actions] == [
        'succeeded', 'failed', 'succeeded', 'failed', 'skipped']
    assert row.state == 'partial'
    assert row.reason.splitlines()[0] == (
        'execution: 2 of 5 actions failed, 1 skipped')


def test_nova_older_than_2_30_is_refused_before_any_migration(
        double, exec_conf, audit, admin_context):
    double.max_version = '2.29'
    executor = migration.Executor(exec_conf, base.load(exec_conf))
    executor.execute(admin_context, audit)

    assert double.actions == []
    rows = _migrations(admin_context, audit)
    assert {row.attempts for row in rows.values()} == {1}
    assert all('microversion 2.30' in row.error for row in rows.values())
    assert db_audits.audit_get(admin_context, audit).state == 'failed'


def test_the_double_rejects_what_nova_would(double, keystone):
    """The schemas are in force: bodies Nova's validation refuses are
    refused and recorded."""
    headers = {'X-Auth-Token': keystone.token(keystone.admin)}
    url = double.compute_url
    # block_migration 'auto' only exists from 2.25, and before it
    # disk_over_commit is required.
    resp = requests.post(
        url + '/servers/%s/action' % VM_A, timeout=30,
        json={'os-migrateLive': {'host': 'h2', 'block_migration': 'auto'}},
        headers=dict(headers, **{'OpenStack-API-Version': 'compute 2.24'}))
    assert resp.status_code == 400
    resp = requests.put(
        url + '/os-services/' + double.services['h1'].id, timeout=30,
        json={'status': 'off'},
        headers=dict(headers, **{'OpenStack-API-Version': 'compute 2.53'}))
    assert resp.status_code == 400
    assert [v[:3] for v in double.violations] == [
        ('migrate_server.migrate_live', 'request_body', '2.24'),
        ('services.update', 'request_body', '2.53')]
    assert double.accepted == {}


# Runs an executor in a child process, as memagg-scheduler would.
_RUN_EXECUTOR = """
import logging, sys
from memagg.common import context
from memagg.conf import CONF
from memagg.drivers.compute_api import base
from memagg.scheduler import migration

logging.basicConfig(level=logging.INFO, stream=sys.stderr)
CONF(['--config-file', sys.argv[1]], project='memagg',
     default_config_files=[])
executor = migration.Executor(CONF, base.load(CONF))
ctxt = context.get_admin_context()
if sys.argv[2] == 'resume':
    executor.resume(ctxt)
else:
    executor.execute(ctxt, sys.argv[2])
"""


def _executor_process(config, what, log_path):
    log = open(log_path, 'ab')
    try:
        return subprocess.Popen(
            [sys.executable, '-c', _RUN_EXECUTOR, str(config), what],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    finally:
        log.close()


def test_a_killed_executor_is_resumed_without_restarting_a_migration(
        double, keystone, sqlite_db, audit, admin_context, tmp_path):
    """The executor runs in a child process and is SIGKILLed while VM A's
    live migration runs in Nova; a new one's resume() follows that
    migration to its end rather than asking for it again, and finishes
    the plan."""
    config = service_procs.write_config(tmp_path / 'memagg.conf', {
        'database': {'connection': sqlite_db},
        'compute': {'compute_api_driver': 'nova'},
        'nova': nova_catalog.nova_options(keystone),
        'consolidation': CONSOLIDATION,
    })
    log_path = tmp_path / 'executor.log'
    double.behaviours[VM_A] = [nova_double.HOLD]

    def running_in_nova_and_db():
        row = _migrations(admin_context, audit).get(VM_A)
        return (row is not None and row.status == 'running'
                and double.accepted[VM_A] == 1)

    first = _executor_process(config, audit, log_path)
    try:
        polling.wait_for(running_in_nova_and_db, 120,
                         message='VM A migrating, in Nova and in the DB')
    finally:
        os.kill(first.pid, signal.SIGKILL)
        first.wait(30)
    assert first.returncode == -signal.SIGKILL
    assert db_audits.audit_get(admin_context, audit).state == 'executing'
    assert double.servers[VM_A].task_state == 'migrating'

    looks = double.looks[VM_A]
    second = _executor_process(config, 'resume', log_path)
    try:
        # The new executor looks at the migration before it ends.
        polling.wait_for(lambda: double.looks[VM_A] > looks, 120,
                         message='the resumed executor following VM A')
        double.release(VM_A)
        assert second.wait(120) == 0, log_path.read_text()
    finally:
        if second.poll() is None:
            second.kill()
            second.wait(30)

    assert double.violations == []
    row = db_audits.audit_get(admin_context, audit)
    assert (row.state, row.reason) == ('succeeded', None), \
        log_path.read_text()
    assert [a.state for a in row.actions] == ['succeeded'] * 5
    assert _hosts(double) == DESTINATIONS
    # No migration was started twice in Nova, nor asked for while one ran.
    assert double.accepted == {VM_A: 1, VM_B: 1, VM_C: 1}
    assert sum(double.refusals.values()) == 0
    rows = _migrations(admin_context, audit)
    assert (rows[VM_A].status, rows[VM_A].attempts) == ('succeeded', 1)
    assert double.services['h1'].status == 'disabled'
