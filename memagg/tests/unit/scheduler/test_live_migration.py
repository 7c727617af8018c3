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

"""One live migration's attempts (memagg.scheduler.live_migration), run
by the plan executor against migration_fixtures.FakeNova on SQLite:
retries, refusals, a lost answer and the timeout."""
from memagg.db import audits as db_audits
from memagg.scheduler import migration
from memagg.tests.unit.scheduler.migration_fixtures import (
    FakeNova, NOVA_REASON, PLAN, SERVERS, VM, action_states, make_audit,
    migrations_by_vm)


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
    assert action_states(admin_context, uuid) == [
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
