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

"""GET /v1/services, and what every route shares: microversion
negotiation and the list parameters."""
from tempest.lib import decorators
from tempest.lib import exceptions as lib_exc

from tempest_plugin.services import memagg_client
from tempest_plugin.tests.api import base


class ServicesTest(base.BaseMemaggTest):

    @decorators.idempotent_id('5f0c7a52-3f0e-4d7e-9b1f-2c1b8f0d6a11')
    def test_list_services(self):
        services = self.list_all(self.client.list_services, 'services')

        binaries = {s['binary'] for s in services}
        # Audits are planned by memagg-scheduler: a deployment runs one.
        self.assertIn('memagg-scheduler', binaries)
        for service in services:
            self.assertIn(service['state'], ('up', 'down'))

    @decorators.idempotent_id('a3d9e2b4-8c61-4f0a-b7de-6e5f4c3b2a10')
    def test_list_services_paginates(self):
        body = self.client.list_services(limit=1)
        first = body['services']

        self.assertEqual(1, len(first))
        [link] = body['links']
        self.assertEqual('next', link['rel'])
        rest = self.client.list_services(marker=first[0]['id'])['services']
        self.assertNotIn(first[0]['id'], [s['id'] for s in rest])

    @decorators.idempotent_id('cde2df12-af4e-4cc8-ad4d-94ae01ff4d6b')
    def test_list_services_filtered_and_sorted(self):
        services = self.client.list_services(
            binary='memagg-scheduler', sort_key='id',
            sort_dir='desc')['services']

        self.assertNotEqual([], services)
        self.assertEqual({'memagg-scheduler'},
                         {s['binary'] for s in services})
        ids = [s['id'] for s in services]
        self.assertEqual(sorted(ids, reverse=True), ids)
        host = services[0]['host']
        on_host = self.client.list_services(host=host)['services']
        self.assertIn(services[0]['id'], [s['id'] for s in on_host])
        self.assertEqual({host}, {s['host'] for s in on_host})

    @decorators.idempotent_id('54be6fee-fe87-40d8-918d-fa8fe3405551')
    def test_microversion_echoed(self):
        self.use_microversion('1.1')

        resp = self.client.list_services(limit=1).response

        self.assertEqual('%s 1.1' % memagg_client.SERVICE_TYPE,
                         resp['openstack-api-version'])
        self.assertIn('OpenStack-API-Version', resp['vary'])

    @decorators.attr(type=['negative'])
    @decorators.idempotent_id('8be960fd-26b6-4321-a0f6-9dfc355d5492')
    def test_list_services_as_member_forbidden(self):
        self.assertRaises(lib_exc.Forbidden,
                          self.member_client.list_services)

    @decorators.attr(type=['negative'])
    @decorators.idempotent_id('d6d7ed13-fa70-4b7f-9e82-73b58eca4397')
    def test_list_services_bad_parameters(self):
        self.assert_bad_request('limit', self.client.list_services, limit=0)
        self.assert_bad_request('limit', self.client.list_services,
                                limit='ten')
        self.assert_bad_request('marker', self.client.list_services,
                                marker='first')
        self.assert_bad_request('marker', self.client.list_services,
                                marker=2 ** 31 - 1)
        # Past what a database driver binds.
        self.assert_bad_request('marker', self.client.list_services,
                                marker=2 ** 64)
        self.assert_bad_request('sort_dir', self.client.list_services,
                                sort_dir='sideways')
        self.assert_bad_request('sort_key', self.client.list_services,
                                sort_key='password')
        self.assert_bad_request('disabled', self.client.list_services,
                                disabled='maybe')
        self.assert_bad_request('colour', self.client.list_services,
                                colour='blue')

    @decorators.attr(type=['negative'])
    @decorators.idempotent_id('fdd42367-d8e2-4291-814e-d18a9ce5c4c7')
    def test_malformed_microversion(self):
        for version in ('1', '1.x', 'one.two', '1.2.3'):
            self.send_microversion(version)
            self.assert_bad_request('OpenStack-API-Version',
                                    self.client.list_services)

    @decorators.attr(type=['negative'])
    @decorators.idempotent_id('988a6404-aff8-45b0-910d-75ee50320a87')
    def test_unsupported_microversion(self):
        for version in ('0.9', '1.999', '2.0'):
            self.send_microversion(version)
            exc = self.assertRaises(lib_exc.NotAcceptable,
                                    self.client.list_services)
            self.assertEqual('OpenStack-API-Version',
                             exc.resp_body[0]['field'])
