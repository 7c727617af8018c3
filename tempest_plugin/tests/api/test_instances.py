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

"""/v1/instances and their working-set history (/wss).

An instance's project may read it; only an admin lists every project's.
The member of the tests' fresh project owns none.
"""
from tempest.lib.common.utils import data_utils
from tempest.lib import decorators
from tempest.lib import exceptions as lib_exc

from tempest_plugin.tests.api import base

# Fields instances show from microversion 1.1.
SINCE_1_1 = ('remote_mb', 'wss_maxavg_mb')


class InstancesTest(base.BaseMemaggTest):

    def an_instance(self):
        """An instance of this cloud (as listed), or skip."""
        return self.first_or_skip(
            self.client.list_instances(limit=1)['instances'], 'instance')

    @decorators.idempotent_id('c594305d-293f-4931-a681-cda2cbbddc36')
    def test_list_instances_paginates(self):
        everything = self.list_all(self.client.list_instances, 'instances')

        paged = self.list_all(self.client.list_instances, 'instances',
                              limit=2)
        self.assertEqual([i['uuid'] for i in everything],
                         [i['uuid'] for i in paged])

    @decorators.idempotent_id('887aeee4-63f2-4a1e-98e0-00de30fb5133')
    def test_list_instances_filtered(self):
        instance = self.an_instance()

        for name in ('host', 'project_id', 'status'):
            listed = self.list_all(self.client.list_instances, 'instances',
                                   **{name: instance[name]})
            self.assertIn(instance['uuid'], [i['uuid'] for i in listed])
            self.assertEqual({instance[name]}, {i[name] for i in listed})

    @decorators.idempotent_id('60e03072-1411-4759-8875-4bd67fca607f')
    def test_list_instances_sorted(self):
        instances = self.client.list_instances(sort_key='booked_mb',
                                               sort_dir='desc')['instances']

        booked = [i['booked_mb'] for i in instances]
        self.assertEqual(sorted(booked, reverse=True), booked)

    @decorators.idempotent_id('1761abb2-1c55-4726-96a7-b2dce040d507')
    def test_show_instance_fields_by_microversion(self):
        uuid = self.an_instance()['uuid']

        self.use_microversion('1.0')
        old = self.client.show_instance(uuid)['instance']
        self.use_microversion('1.1')
        new = self.client.show_instance(uuid)['instance']

        self.assertEqual(uuid, new['uuid'])
        for field in SINCE_1_1:
            self.assertNotIn(field, old)
            self.assertIn(field, new)
        self.assertGreaterEqual(new['remote_mb'], 0)
        self.assertEqual(set(old), set(new) - set(SINCE_1_1))

    @decorators.idempotent_id('d69828fe-7c91-4f9e-9214-56d2bd601124')
    def test_list_wss(self):
        uuid = self.an_instance()['uuid']

        samples = self.list_all(self.client.list_instance_wss, 'wss_samples',
                                uuid)
        if not samples:
            raise self.skipException('instance %s has no WSS sample yet'
                                     % uuid)
        times = [s['sampled_at'] for s in samples]
        self.assertEqual(sorted(times), times)
        # since includes its own second: the last sample is in.
        recent = self.list_all(self.client.list_instance_wss, 'wss_samples',
                               uuid, since=times[-1])
        self.assertIn(samples[-1]['id'], [s['id'] for s in recent])
        self.assertTrue(all(s['sampled_at'] >= times[-1] for s in recent))
        self.assertEqual([], self.client.list_instance_wss(
            uuid, until='2000-01-01T00:00:00Z')['wss_samples'])

    @decorators.idempotent_id('20543016-df79-4e59-adbd-0de90a91d24d')
    def test_member_lists_only_its_project(self):
        # The member's project is new: it owns no instance.
        self.assertEqual([], self.member_client.list_instances()['instances'])
        own = self.member_client.list_instances(
            project_id=self.os_primary.credentials.project_id)
        self.assertEqual([], own['instances'])

    @decorators.attr(type=['negative'])
    @decorators.idempotent_id('edf75469-3665-401b-a065-19137fc83234')
    def test_member_forbidden_other_projects(self):
        self.assertRaises(lib_exc.Forbidden,
                          self.member_client.list_instances,
                          project_id=self.os_admin.credentials.project_id)

    @decorators.attr(type=['negative'])
    @decorators.idempotent_id('0b6f4c1e-5d2a-4f7b-9c3e-8a1d2e4f6b70')
    def test_other_projects_instance_not_found(self):
        # As Nova answers: the member is not told that it exists.
        uuid = self.an_instance()['uuid']
        self.assertRaises(lib_exc.NotFound,
                          self.member_client.show_instance, uuid)
        self.assertRaises(lib_exc.NotFound,
                          self.member_client.list_instance_wss, uuid)

    @decorators.attr(type=['negative'])
    @decorators.idempotent_id('5e8d7a21-3c4b-4e6f-a9d0-1b2c3d4e5f60')
    def test_member_may_not_filter_by_host(self):
        host = self.an_instance()['host']
        self.assertRaises(lib_exc.Forbidden,
                          self.member_client.list_instances, host=host)

    @decorators.attr(type=['negative'])
    @decorators.idempotent_id('889aab31-a349-4745-9ffa-2dc23ca51224')
    def test_unknown_instance(self):
        uuid = data_utils.rand_uuid()
        self.assertRaises(lib_exc.NotFound, self.client.show_instance, uuid)
        self.assertRaises(lib_exc.NotFound, self.client.list_instance_wss,
                          uuid)
        self.assertRaises(lib_exc.NotFound, self.member_client.show_instance,
                          uuid)

    @decorators.attr(type=['negative'])
    @decorators.idempotent_id('1186bc63-8832-4fb1-8e94-b1745f5b7ac5')
    def test_bad_parameters(self):
        self.assert_bad_request('uuid', self.client.show_instance,
                                'not-a-uuid')
        self.assert_bad_request('marker', self.client.list_instances,
                                marker='not-a-uuid')
        self.assert_bad_request('marker', self.client.list_instances,
                                marker=data_utils.rand_uuid())
        self.assert_bad_request('limit', self.client.list_instances,
                                limit=1.5)
        self.assert_bad_request('since', self.client.list_instance_wss,
                                data_utils.rand_uuid(), since='yesterday')

    @decorators.attr(type=['negative'])
    @decorators.idempotent_id('d75ec569-55b4-40ed-8c5a-16db8c5fabf5')
    def test_wss_range_ends_before_it_starts(self):
        uuid = self.an_instance()['uuid']
        self.assert_bad_request('until', self.client.list_instance_wss,
                                uuid, since='2024-05-02T00:00:00Z',
                                until='2024-05-01T00:00:00Z')
