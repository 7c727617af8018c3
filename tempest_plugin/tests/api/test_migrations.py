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

"""/v1/migrations: live migrations memagg asked Nova for; POST since 1.4.

The positive create asks for a real live migration of an instance of the
cloud (memagg-scheduler executes it through the compute API); its answer
is checked, not where the instance ends up.
"""
from tempest.lib.common.utils import data_utils
from tempest.lib import decorators
from tempest.lib import exceptions as lib_exc

from tempest_plugin.tests.api import base


class MigrationsTest(base.BaseMemaggTest):

    def a_migration(self):
        """A migration of this cloud (as listed), or skip."""
        return self.first_or_skip(
            self.client.list_migrations(limit=1)['migrations'], 'migration')

    @decorators.idempotent_id('cd77c428-ce25-463a-aa9e-92558410a1d0')
    def test_list_migrations_paginates(self):
        everything = self.list_all(self.client.list_migrations, 'migrations')

        paged = self.list_all(self.client.list_migrations, 'migrations',
                              limit=1)
        self.assertEqual([m['uuid'] for m in everything],
                         [m['uuid'] for m in paged])

    @decorators.idempotent_id('a3f71664-a768-4af7-b0ef-2d29a4cfd342')
    def test_list_migrations_filtered(self):
        migration = self.a_migration()

        for name in ('instance_uuid', 'source_host', 'dest_host', 'status'):
            listed = self.list_all(self.client.list_migrations,
                                   'migrations', **{name: migration[name]})
            self.assertIn(migration['uuid'], [m['uuid'] for m in listed])
            self.assertEqual({migration[name]}, {m[name] for m in listed})
        recent = self.list_all(self.client.list_migrations, 'migrations',
                               since=migration['created_at'])
        self.assertIn(migration['uuid'], [m['uuid'] for m in recent])
        self.assertTrue(all(m['created_at'] >= migration['created_at']
                            for m in recent))

    @decorators.idempotent_id('fe1e189a-a196-48e7-80f1-a52b156eb36e')
    def test_show_migration(self):
        listed = self.a_migration()

        migration = self.client.show_migration(listed['uuid'])['migration']

        self.assertEqual(set(listed), set(migration))
        for field in ('uuid', 'instance_uuid', 'source_host', 'dest_host',
                      'created_at'):
            self.assertEqual(listed[field], migration[field], field)
        self.assertNotEqual(migration['source_host'],
                            migration['dest_host'])
        self.assertGreaterEqual(migration['attempts'], 0)

    @decorators.idempotent_id('6f0c1d52-8a3e-4b7e-9d2a-51c3e7b0a4f6')
    def test_show_migration_remote_memory_since_1_6(self):
        listed = self.a_migration()

        self.use_microversion('1.6')
        migration = self.client.show_migration(listed['uuid'])['migration']
        for field in ('remote_mb', 'local_copy_left_mb'):
            self.assertIn(field, migration)
            if migration[field] is not None:
                self.assertGreaterEqual(migration[field], 0, field)
        self.send_microversion('1.5')
        older = self.client.show_migration(listed['uuid'])['migration']
        self.assertNotIn('remote_mb', older)
        self.assertNotIn('local_copy_left_mb', older)

    @decorators.attr(type=['negative'])
    @decorators.idempotent_id('fff3d5db-6301-477f-9706-1afafb3c3b2c')
    def test_migrations_as_member_forbidden(self):
        self.assertRaises(lib_exc.Forbidden,
                          self.member_client.list_migrations)
        self.assertRaises(lib_exc.Forbidden,
                          self.member_client.show_migration,
                          data_utils.rand_uuid())

    @decorators.attr(type=['negative'])
    @decorators.idempotent_id('4d002075-5ec0-4323-a993-b1943a792714')
    def test_unknown_migration(self):
        self.assertRaises(lib_exc.NotFound, self.client.show_migration,
                          data_utils.rand_uuid())

    @decorators.attr(type=['negative'])
    @decorators.idempotent_id('d5a844c8-d5db-4327-a496-ea788c89ae12')
    def test_bad_parameters(self):
        self.assert_bad_request('uuid', self.client.show_migration,
                                'migration-1')
        self.assert_bad_request('source_host', self.client.list_migrations,
                                source_host='')
        self.assert_bad_request('until', self.client.list_migrations,
                                until='tomorrow')
        self.assert_bad_request('sort_dir', self.client.list_migrations,
                                sort_dir='up')

    def a_movable_instance(self):
        """(an instance with no migration under way, another active host),
        or skip."""
        hosts = [h['name'] for h in self.list_all(
            self.client.list_hosts, 'hosts', state='active')]
        for instance in self.list_all(self.client.list_instances,
                                      'instances'):
            others = [h for h in hosts if h != instance['host']]
            if instance['status'] == 'gone' or not others:
                continue
            busy = [m for status in ('queued', 'running')
                    for m in self.client.list_migrations(
                        instance_uuid=instance['uuid'],
                        status=status)['migrations']]
            if not busy:
                return instance, others[0]
        raise self.skipException('this cloud has no instance to move to '
                                 'another active host')

    @decorators.idempotent_id('1a5a3e77-eff8-478c-9bb0-a9d00700d416')
    def test_create_migration(self):
        self.use_microversion('1.4')
        instance, dest = self.a_movable_instance()

        migration = self.client.create_migration(
            instance_uuid=instance['uuid'], dest_host=dest)['migration']

        self.assertEqual(
            (instance['uuid'], instance['host'], dest, 'queued', 0),
            (migration['instance_uuid'], migration['source_host'],
             migration['dest_host'], migration['status'],
             migration['attempts']))
        shown = self.client.show_migration(migration['uuid'])['migration']
        self.assertEqual(migration['uuid'], shown['uuid'])

    @decorators.attr(type=['negative'])
    @decorators.idempotent_id('9558e9ef-b06f-4ac4-baf9-c0e61404a45a')
    def test_create_migration_as_member_forbidden(self):
        self.use_microversion('1.4')
        self.assertRaises(lib_exc.Forbidden,
                          self.member_client.create_migration,
                          instance_uuid=data_utils.rand_uuid(),
                          dest_host='compute-1')

    @decorators.attr(type=['negative'])
    @decorators.idempotent_id('59542dd8-e38b-4614-ac9f-065516a58653')
    def test_create_migration_bad_body(self):
        self.use_microversion('1.4')
        uuid = data_utils.rand_uuid()
        self.assert_bad_request('instance_uuid',
                                self.client.create_migration,
                                dest_host='compute-1')
        self.assert_bad_request('instance_uuid',
                                self.client.create_migration,
                                instance_uuid='vm-1', dest_host='compute-1')
        self.assert_bad_request('dest_host', self.client.create_migration,
                                instance_uuid=uuid)
        self.assert_bad_request('dest_host', self.client.create_migration,
                                instance_uuid=uuid, dest_host='')
        self.assert_bad_request('force', self.client.create_migration,
                                instance_uuid=uuid, dest_host='compute-1',
                                force=True)

    @decorators.attr(type=['negative'])
    @decorators.idempotent_id('32d21877-ebf7-4b45-b800-2aa2e799908a')
    def test_create_migration_to_its_own_host(self):
        self.use_microversion('1.4')
        instance = self.first_or_skip(
            self.client.list_instances(limit=1)['instances'], 'instance')

        error = self.assert_bad_request(
            'dest_host', self.client.create_migration,
            instance_uuid=instance['uuid'], dest_host=instance['host'])
        self.assertIn(instance['uuid'], error['detail'])

    @decorators.attr(type=['negative'])
    @decorators.idempotent_id('917b2e9e-70ee-49dd-b752-f679a0fa69c7')
    def test_create_migration_unknown_instance_or_host(self):
        self.use_microversion('1.4')
        self.assertRaises(lib_exc.NotFound, self.client.create_migration,
                          instance_uuid=data_utils.rand_uuid(),
                          dest_host='compute-1')
        instance = self.first_or_skip(
            self.client.list_instances(limit=1)['instances'], 'instance')
        self.assertRaises(lib_exc.NotFound, self.client.create_migration,
                          instance_uuid=instance['uuid'],
                          dest_host=data_utils.rand_name('no-such-host'))

    @decorators.attr(type=['negative'])
    @decorators.idempotent_id('d0e3582b-3fc7-442b-84e1-99224a12f9b4')
    def test_create_migration_below_its_microversion(self):
        self.use_microversion('1.3')
        self.assert_not_allowed('GET, HEAD, OPTIONS',
                                self.client.create_migration,
                                instance_uuid=data_utils.rand_uuid(),
                                dest_host='compute-1')
