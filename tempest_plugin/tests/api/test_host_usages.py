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

"""GET /v1/host_usages (since 1.5): every host's memory in one answer."""
from tempest.lib import decorators
from tempest.lib import exceptions as lib_exc

from tempest_plugin.tests.api import base

SINCE = '1.5'
AMOUNTS = ('wss_maxavg_mb', 'booked_mb', 'instances', 'remote_mb')


class HostUsagesTest(base.BaseMemaggTest):

    @decorators.idempotent_id('40622105-d2ad-4bd8-9974-fc42d53274cf')
    def test_list_host_usages(self):
        self.use_microversion(SINCE)

        body = self.client.list_host_usages()

        usages = body['host_usages']
        # Every host memagg knows, unpaginated, in name order.
        hosts = self.list_all(self.client.list_hosts, 'hosts')
        self.assertEqual([h['name'] for h in hosts],
                         [u['host'] for u in usages])
        by_name = {h['name']: h for h in hosts}
        for usage in usages:
            host = by_name[usage['host']]
            self.assertEqual(
                (host['memory_mb'], host['reserved_mb'], host['state']),
                (usage['memory_mb'], usage['reserved_mb'], usage['state']))
            for key in AMOUNTS:
                self.assertGreaterEqual(usage[key], 0, key)
        self.assertGreaterEqual(body['reservoir_free_mb'], 0)

    @decorators.attr(type=['negative'])
    @decorators.idempotent_id('2029afe0-f522-447f-a14b-72258011e390')
    def test_host_usages_as_member_forbidden(self):
        self.use_microversion(SINCE)
        self.assertRaises(lib_exc.Forbidden,
                          self.member_client.list_host_usages)

    @decorators.attr(type=['negative'])
    @decorators.idempotent_id('e4a2f20b-21bb-43c4-adf3-3fb5355a00c3')
    def test_host_usages_below_their_microversion(self):
        self.send_microversion('1.4')
        self.assertRaises(lib_exc.NotFound, self.client.list_host_usages)
