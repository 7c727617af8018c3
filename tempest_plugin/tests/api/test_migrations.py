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

"""/v1/migrations: live migrations memagg asked Nova for."""
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
