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

"""Consolidation plans packed by working set, executed through this Nova's
live-migration API by memagg's executor and nova compute API driver, with
and without the Placement job."""
from memagg.db import audits as db_audits
from memagg.db import migrations as db_migrations
from memagg.scheduler import audits
from memagg.scheduler import migration
from memagg.scheduler import placement
from memagg.scheduler import plans
from memagg.tests.nova_functional import harness

#: Booked MiB of every VM: a host's booked capacity (8,192 - 512 reserved,
#: at ratio 1.0) takes two of them, not three; their working sets take
#: three.
BOOKED_MB = 3072
WSS_MB = 600
HOSTS = ('h1', 'h2', 'h3')


def _moves(audit):
    return [a for a in audit.actions
            if a.action_type == plans.MIGRATE]


class ConsolidationTest(harness.MemaggNovaTestCase):
    """Three hosts with a VM each and booked room for two; the plan packs
    the three VMs onto one host by working set."""

    def setUp(self):
        super().setUp()
        for name, value in dict(poll_interval=0.1, migration_timeout=60,
                                max_retries=0).items():
            self.memagg_conf.config(**{name: value,
                                       'group': 'consolidation'})
        self.start_hosts(*HOSTS)
        flavor = self.flavor(BOOKED_MB)
        for host in HOSTS:
            self.report(host, [(self.boot(flavor, host=host), BOOKED_MB,
                                WSS_MB)])

    def _plan(self):
        uuid = db_audits.audit_create(self.ctxt, {}).uuid
        audit = audits.run_audit(self.ctxt, uuid)
        self.assertEqual(audits.RECOMMENDED, audit.state, audit.reason)
        moves = _moves(audit)
        self.assertTrue(moves)
        # Packed by working set: some destination ends with more booked
        # memory than Placement lets it take at the operator's ratio.
        booked = dict.fromkeys(HOSTS, BOOKED_MB)
        for move in moves:
            booked[move.source_host] -= BOOKED_MB
            booked[move.dest_host] += BOOKED_MB
        self.assertGreater(max(booked.values()),
                           harness.HOST_MEMORY_MB
                           - harness.RESERVED_MB)
        return uuid, moves

    def _execute(self, audit_uuid):
        executor = migration.Executor(harness.CONF, self.compute_api())
        executor.execute(self.ctxt, audit_uuid)
        return db_audits.audit_get(self.ctxt, audit_uuid)

    def _allocated_mb(self, host):
        rp = self._get_provider_uuid_by_host(host)
        return self._get_provider_usages(rp).get('MEMORY_MB', 0)

    def test_plan_executes_when_the_placement_job_is_on(self):
        self.memagg_conf.config(enabled=True, group='placement')
        job = placement.InventoryJob(
            harness.CONF, connection=self.placement_connection())
        job.run(self.ctxt)
        for host in HOSTS:
            # (1 - 0.1 margin) x 3,072 booked / 600 used, at most 4.0.
            inventory = self._get_provider_inventory(
                self._get_provider_uuid_by_host(host))
            self.assertEqual(4.0, inventory['MEMORY_MB']['allocation_ratio'])
        uuid, moves = self._plan()

        audit = self._execute(uuid)

        self.assertEqual('succeeded', audit.state, [
            (a.instance_uuid, a.state, a.reason) for a in audit.actions])
        for move in moves:
            self.assertEqual(move.dest_host,
                             self.host_of(move.instance_uuid))
            # Placement's allocations followed the VM.
            allocations = self._get_allocations_by_server_uuid(
                move.instance_uuid)
            self.assertEqual(
                [self._get_provider_uuid_by_host(move.dest_host)],
                list(allocations))
        for host in HOSTS:
            on_host = [s for s in self.api.get_servers(detail=True)
                       if s['OS-EXT-SRV-ATTR:host'] == host]
            self.assertEqual(len(on_host) * BOOKED_MB,
                             self._allocated_mb(host))

    def test_without_the_job_refusals_are_recorded_per_vm(self):
        uuid, _ = self._plan()

        audit = self._execute(uuid)

        refused = [a for a in _moves(audit) if a.state == 'failed']
        self.assertTrue(refused)
        migrations = {m.instance_uuid: m for m in db_migrations
                      .migrations_of_audit(self.ctxt, uuid).values()}
        for action in refused:
            # Nova's reason, and the VM where it was.
            self.assertIn('No valid host',
                          migrations[action.instance_uuid].error)
            self.assertEqual(action.source_host,
                             self.host_of(action.instance_uuid))
        # The move that booked room allowed was made.
        self.assertIn('succeeded', [a.state for a in _moves(audit)])
        self.assertEqual('partial', audit.state)
        self.assertIn('failed', audit.reason)


class AbortTest(harness.MemaggNovaTestCase):
    """Live migrations that run until Nova aborts them."""

    # Its live migrations run until aborted, or for about 5 s.
    compute_driver = 'fake.FakeLiveMigrateDriver'

    def test_a_migration_past_the_timeout_is_aborted_through_nova(self):
        self.memagg_conf.config(poll_interval=0.1, migration_timeout=1,
                                max_retries=0, group='consolidation')
        self.start_hosts('h1', 'h2')
        server = self.boot(self.flavor(1024), host='h1')
        self.report('h1', [(server, 1024, 300)])
        self.report('h2', [])
        uuid, _ = db_migrations.migration_request(
            self.ctxt, server['id'], 'h1', 'h2', 'operator')

        executor = migration.Executor(harness.CONF, self.compute_api())
        executor.execute(self.ctxt, uuid)

        audit = db_audits.audit_get(self.ctxt, uuid)
        action, = audit.actions
        self.assertEqual('failed', action.state)
        row, = db_migrations.migrations_of_audit(self.ctxt, uuid).values()
        self.assertEqual('failed', row.status)
        self.assertIn("aborted through Nova's live-migration abort API",
                      row.error)
        self.assertEqual('h1', self.host_of(server['id']))
        migrations = self.api.get_migrations()
        self.assertEqual(['cancelled'], [
            m['status'] for m in migrations
            if m['instance_uuid'] == server['id']])
