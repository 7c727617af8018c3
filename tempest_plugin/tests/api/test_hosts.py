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

"""/v1/hosts: compute nodes; POST /v1/hosts/{name}/reclaim since 1.3."""
from tempest.lib.common.utils import data_utils
from tempest.lib import decorators
from tempest.lib import exceptions as lib_exc

from tempest_plugin.tests.api import base


class HostsTest(base.BaseMemaggTest):

    @decorators.idempotent_id('a595734d-ac51-4d3b-8983-2c5a5c3a2862')
    def test_list_hosts_paginates(self):
        everything = self.list_all(self.client.list_hosts, 'hosts')

        # One host per page, following the next links, gives the same
        # hosts in the same (name) order.
        paged = self.list_all(self.client.list_hosts, 'hosts', limit=1)
        self.assertEqual([h['name'] for h in everything],
                         [h['name'] for h in paged])

    @decorators.idempotent_id('f0b68d0a-0766-4b4f-95a7-6a9904522386')
    def test_list_hosts_filtered_and_sorted(self):
        hosts = self.client.list_hosts(sort_key='memory_mb',
                                       sort_dir='desc')['hosts']
        memory = [h['memory_mb'] for h in hosts]
        self.assertEqual(sorted(memory, reverse=True), memory)
        host = self.first_or_skip(hosts, 'host')

        same_state = self.client.list_hosts(state=host['state'])['hosts']
        self.assertIn(host['name'], [h['name'] for h in same_state])
        self.assertEqual({host['state']}, {h['state'] for h in same_state})
        self.assertEqual([], self.client.list_hosts(
            state=data_utils.rand_name('no-such-state'))['hosts'])

    @decorators.idempotent_id('f495bef7-f7f7-4881-b8ee-445492857c7f')
    def test_show_host(self):
        listed = self.first_or_skip(self.client.list_hosts()['hosts'],
                                    'host')

        host = self.client.show_host(listed['name'])['host']

        self.assertEqual(listed['name'], host['name'])
        self.assertGreater(host['memory_mb'], 0)
        self.assertGreaterEqual(host['memory_mb'], host['reserved_mb'])

    @decorators.attr(type=['negative'])
    @decorators.idempotent_id('91af4617-9eb9-431b-84a8-73451d93717f')
    def test_hosts_as_member_forbidden(self):
        self.assertRaises(lib_exc.Forbidden, self.member_client.list_hosts)
        self.assertRaises(lib_exc.Forbidden, self.member_client.show_host,
                          data_utils.rand_name('host'))
        self.use_microversion('1.3')
        self.assertRaises(lib_exc.Forbidden,
                          self.member_client.reclaim_host,
                          data_utils.rand_name('host'), size_mb=128)

    @decorators.attr(type=['negative'])
    @decorators.idempotent_id('1beab857-4038-4530-9cf5-daf3bccba94b')
    def test_show_unknown_host(self):
        self.assertRaises(lib_exc.NotFound, self.client.show_host,
                          data_utils.rand_name('no-such-host'))

    @decorators.attr(type=['negative'])
    @decorators.idempotent_id('506ee5b4-24cf-49bf-93e3-75145f81f131')
    def test_list_hosts_bad_parameters(self):
        self.assert_bad_request('limit', self.client.list_hosts, limit=-1)
        self.assert_bad_request('marker', self.client.list_hosts,
                                marker=data_utils.rand_name('no-such-host'))
        self.assert_bad_request('sort_key', self.client.list_hosts,
                                sort_key='secret')

    @decorators.attr(type=['negative'])
    @decorators.idempotent_id('c6df4da5-175d-4c22-9c73-0c8de390909c')
    def test_reclaim_below_its_microversion(self):
        self.use_microversion('1.2')
        self.assertRaises(lib_exc.NotFound, self.client.reclaim_host,
                          data_utils.rand_name('host'), size_mb=128)

    @decorators.attr(type=['negative'])
    @decorators.idempotent_id('5384cb75-c66a-4d45-9835-92ebb6de1a30')
    def test_reclaim_unknown_host(self):
        self.use_microversion('1.3')
        self.assertRaises(lib_exc.NotFound, self.client.reclaim_host,
                          data_utils.rand_name('no-such-host'), size_mb=128)

    @decorators.attr(type=['negative'])
    @decorators.idempotent_id('eae9c4ab-4a8c-44a3-a8ee-636ce75fbb6b')
    def test_reclaim_bad_body(self):
        self.use_microversion('1.3')
        name = data_utils.rand_name('host')
        self.assert_bad_request('size_mb', self.client.reclaim_host, name)
        self.assert_bad_request('size_mb', self.client.reclaim_host, name,
                                size_mb=0)
        self.assert_bad_request('size_mb', self.client.reclaim_host, name,
                                size_mb='lots')
        self.assert_bad_request('force', self.client.reclaim_host, name,
                                size_mb=128, force=True)
