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

"""/v1/grants: remote memory lent to instances; POST and DELETE since 1.3.

Granting and releasing memory moves guests' pages on real compute nodes,
so only their refusals are tested here; the grants shown are those the
cloud has.
"""
from tempest.lib.common.utils import data_utils
from tempest.lib import decorators
from tempest.lib import exceptions as lib_exc

from tempest_plugin.tests.api import base

# Fields grants show from microversion 1.3 (slabs: endpoint).
SINCE_1_3 = ('partial', 'reason', 'slab_size_mb')


class GrantsTest(base.BaseMemaggTest):

    def a_grant(self):
        """A grant of this cloud (as listed), or skip."""
        return self.first_or_skip(self.client.list_grants(limit=1)['grants'],
                                  'grant')

    @decorators.idempotent_id('0e26584c-7b48-4864-bf8a-59fff045eeb4')
    def test_list_grants_paginates(self):
        everything = self.list_all(self.client.list_grants, 'grants')

        paged = self.list_all(self.client.list_grants, 'grants', limit=1)
        self.assertEqual([g['uuid'] for g in everything],
                         [g['uuid'] for g in paged])

    @decorators.idempotent_id('bde5c951-1eb7-4a23-a364-8587808a931a')
    def test_list_grants_filtered(self):
        grant = self.a_grant()

        for name in ('instance_uuid', 'consumer_host', 'status'):
            listed = self.list_all(self.client.list_grants, 'grants',
                                   **{name: grant[name]})
            self.assertIn(grant['uuid'], [g['uuid'] for g in listed])
            self.assertEqual({grant[name]}, {g[name] for g in listed})

    @decorators.idempotent_id('024fd7af-ddec-4350-a903-47d24f542e4e')
    def test_show_grant_fields_by_microversion(self):
        uuid = self.a_grant()['uuid']

        self.use_microversion('1.2')
        old = self.client.show_grant(uuid)['grant']
        self.use_microversion('1.3')
        new = self.client.show_grant(uuid)['grant']

        self.assertEqual(uuid, new['uuid'])
        self.assertNotIn('secret', new)
        for field in SINCE_1_3:
            self.assertNotIn(field, old)
            self.assertIn(field, new)
        self.assertEqual(set(old), set(new) - set(SINCE_1_3))
        self.assertEqual([s['index'] for s in new['slabs']],
                         sorted(s['index'] for s in new['slabs']))
        for slab in old['slabs']:
            self.assertNotIn('endpoint', slab)
        for slab in new['slabs']:
            self.assertIn('endpoint', slab)
            self.assertEqual(new['slab_size_mb'], slab['size_mb'])

    @decorators.attr(type=['negative'])
    @decorators.idempotent_id('02191f1f-3b7b-4d18-9b8c-631a30207c07')
    def test_grants_as_member_forbidden(self):
        uuid = data_utils.rand_uuid()
        self.assertRaises(lib_exc.Forbidden, self.member_client.list_grants)
        self.assertRaises(lib_exc.Forbidden, self.member_client.show_grant,
                          uuid)
        self.use_microversion('1.3')
        self.assertRaises(lib_exc.Forbidden, self.member_client.create_grant,
                          instance_uuid=uuid, size_mb=128)
        self.assertRaises(lib_exc.Forbidden, self.member_client.delete_grant,
                          uuid)

    @decorators.attr(type=['negative'])
    @decorators.idempotent_id('37379f1b-3785-477d-bc8c-66e054dcc73d')
    def test_unknown_grant(self):
        uuid = data_utils.rand_uuid()
        self.assertRaises(lib_exc.NotFound, self.client.show_grant, uuid)
        self.use_microversion('1.3')
        self.assertRaises(lib_exc.NotFound, self.client.delete_grant, uuid)
        # The instance to lend to is looked up first.
        self.assertRaises(lib_exc.NotFound, self.client.create_grant,
                          instance_uuid=uuid, size_mb=128)

    @decorators.attr(type=['negative'])
    @decorators.idempotent_id('7d92f0e9-5c57-4871-8d33-28bc1476cfbc')
    def test_grant_routes_below_their_microversion(self):
        self.use_microversion('1.2')
        uuid = data_utils.rand_uuid()
        self.assert_not_allowed('GET, HEAD, OPTIONS',
                                self.client.create_grant,
                                instance_uuid=uuid, size_mb=128)
        self.assert_not_allowed('GET, HEAD, OPTIONS',
                                self.client.delete_grant, uuid)

    @decorators.attr(type=['negative'])
    @decorators.idempotent_id('89469933-95b8-4a83-9e9a-4cba4f3c1e35')
    def test_create_grant_bad_body(self):
        self.use_microversion('1.3')
        uuid = data_utils.rand_uuid()
        self.assert_bad_request('instance_uuid', self.client.create_grant,
                                size_mb=128)
        self.assert_bad_request('instance_uuid', self.client.create_grant,
                                instance_uuid='vm-1', size_mb=128)
        self.assert_bad_request('size_mb', self.client.create_grant,
                                instance_uuid=uuid)
        self.assert_bad_request('size_mb', self.client.create_grant,
                                instance_uuid=uuid, size_mb=-128)
        self.assert_bad_request('size_mb', self.client.create_grant,
                                instance_uuid=uuid, size_mb=2 ** 31)
        self.assert_bad_request('donor_host', self.client.create_grant,
                                instance_uuid=uuid, size_mb=128,
                                donor_host='compute-1')

    @decorators.attr(type=['negative'])
    @decorators.idempotent_id('dfe933b0-f8a1-4c62-b69a-71840f03fd8d')
    def test_bad_parameters(self):
        self.assert_bad_request('uuid', self.client.show_grant, 'grant-1')
        self.assert_bad_request('instance_uuid', self.client.list_grants,
                                instance_uuid='vm-1')
        self.assert_bad_request('marker', self.client.list_grants,
                                marker=data_utils.rand_uuid())
