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

"""GET /v1/reservoir: the memory the cloud can lend and has lent."""
from tempest.lib import decorators
from tempest.lib import exceptions as lib_exc

from tempest_plugin.tests.api import base

TOTALS = ('free_reservoir_mb', 'lendable_mb', 'lent_mb', 'borrowed_mb')


class ReservoirTest(base.BaseMemaggTest):

    @decorators.idempotent_id('75e91bdf-5487-4411-b2fd-6e057ab7fe6a')
    def test_show_reservoir(self):
        reservoir = self.client.show_reservoir()['reservoir']

        for key in TOTALS:
            self.assertEqual(sum(h[key] for h in reservoir['hosts']),
                             reservoir[key], key)
            self.assertGreaterEqual(reservoir[key], 0, key)
        # Every host in the reservoir is a compute host memagg knows.
        hosts = self.list_all(self.client.list_hosts, 'hosts')
        self.assertLessEqual({h['host'] for h in reservoir['hosts']},
                             {h['name'] for h in hosts})

    @decorators.attr(type=['negative'])
    @decorators.idempotent_id('542a37d4-c0aa-4d26-bb69-0c20ad0371a5')
    def test_reservoir_as_member_forbidden(self):
        self.assertRaises(lib_exc.Forbidden,
                          self.member_client.show_reservoir)

    @decorators.attr(type=['negative'])
    @decorators.idempotent_id('85eaab67-d8f9-42c7-bc33-e1fbd15c3763')
    def test_reservoir_takes_no_parameters(self):
        self.assert_bad_request('limit', self.client.show_reservoir,
                                limit=10)
