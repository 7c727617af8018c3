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

"""/v1/audits: consolidation rounds; POST and POST .../execute since 1.2.

The class starts one audit of its own (it is planned, never executed):
executing a plan migrates instances, which a test must not do to a cloud
it shares.
"""
from tempest.lib.common.utils import data_utils
from tempest.lib import decorators
from tempest.lib import exceptions as lib_exc

from tempest_plugin.common import waiters
from tempest_plugin.tests.api import base

# Fields audits show from microversion 1.2.
SINCE_1_2 = ('auto_execute', 'unplaced')


class AuditsTest(base.BaseMemaggTest):

    @classmethod
    def resource_setup(cls):
        super().resource_setup()
        cls.client.api_microversion = '1.2'
        try:
            cls.audit = cls.client.create_audit(
                memory_basis='booked',
                parameters={'underload_require': 'both'})['audit']
        finally:
            cls.client.api_microversion = cls.request_microversion

    @decorators.idempotent_id('245d32ed-49f7-4038-b928-c3132b3bb96c')
    def test_created_audit(self):
        self.assertIn(self.audit['state'],
                      ('pending', 'planning', 'recommended', 'failed'))
        self.assertEqual('booked', self.audit['memory_basis'])
        self.assertEqual({'underload_require': 'both'},
                         self.audit['parameters'])
        self.assertFalse(self.audit['auto_execute'])

    @decorators.idempotent_id('f7af4de7-7a09-465f-8158-b19b86c98e2e')
    def test_list_audits(self):
        uuid = self.audit['uuid']
        since = self.audit['created_at']

        recent = self.list_all(self.client.list_audits, 'audits',
                               since=since, limit=2)
        self.assertIn(uuid, [a['uuid'] for a in recent])
        self.assertTrue(all(a['created_at'] >= since for a in recent))
        self.assertNotIn(uuid, [a['uuid'] for a in self.list_all(
            self.client.list_audits, 'audits', until='2000-01-01T00:00:00Z')])
        newest_first = self.client.list_audits(
            sort_key='created_at', sort_dir='desc')['audits']
        created = [a['created_at'] for a in newest_first]
        self.assertEqual(sorted(created, reverse=True), created)

    @decorators.idempotent_id('1f5a0e32-1cea-41f7-b611-c6cef29c05d2')
    def test_list_audits_by_state(self):
        state = waiters.wait_for_audit_state(self.client,
                                             self.audit['uuid'])['state']

        listed = self.list_all(self.client.list_audits, 'audits',
                               state=state, since=self.audit['created_at'])
        self.assertIn(self.audit['uuid'], [a['uuid'] for a in listed])
        self.assertEqual({state}, {a['state'] for a in listed})

    @decorators.idempotent_id('f8b38f95-62a1-4bde-a290-37ef60c4e183')
    def test_show_audit_fields_by_microversion(self):
        uuid = self.audit['uuid']

        self.use_microversion('1.1')
        old = self.client.show_audit(uuid)['audit']
        self.use_microversion('1.2')
        new = self.client.show_audit(uuid)['audit']

        self.assertEqual(uuid, new['uuid'])
        for field in SINCE_1_2:
            self.assertNotIn(field, old)
            self.assertIn(field, new)
        self.assertEqual(set(old), set(new) - set(SINCE_1_2))
        self.assertEqual(list(range(len(new['actions']))),
                         [a['sequence'] for a in new['actions']])

    @decorators.attr(type=['negative'])
    @decorators.idempotent_id('1be43254-6744-42e5-8d74-ae46f3544072')
    def test_audits_as_member_forbidden(self):
        self.assertRaises(lib_exc.Forbidden, self.member_client.list_audits)
        self.assertRaises(lib_exc.Forbidden, self.member_client.show_audit,
                          self.audit['uuid'])
        self.use_microversion('1.2')
        self.assertRaises(lib_exc.Forbidden, self.member_client.create_audit)
        self.assertRaises(lib_exc.Forbidden,
                          self.member_client.execute_audit,
                          self.audit['uuid'])

    @decorators.attr(type=['negative'])
    @decorators.idempotent_id('563f91f7-c044-45ef-9e04-e16c9b965d45')
    def test_unknown_audit(self):
        uuid = data_utils.rand_uuid()
        self.assertRaises(lib_exc.NotFound, self.client.show_audit, uuid)
        self.use_microversion('1.2')
        self.assertRaises(lib_exc.NotFound, self.client.execute_audit, uuid)

    @decorators.attr(type=['negative'])
    @decorators.idempotent_id('bec5b579-de85-4413-aaf4-a0ecdd93bd7b')
    def test_audit_routes_below_their_microversion(self):
        self.use_microversion('1.1')
        self.assert_not_allowed('GET, HEAD, OPTIONS',
                                self.client.create_audit)
        self.assertRaises(lib_exc.NotFound, self.client.execute_audit,
                          self.audit['uuid'])

    @decorators.attr(type=['negative'])
    @decorators.idempotent_id('6dc6a2cb-8f1c-4105-8266-4eef094a8aef')
    def test_create_audit_bad_body(self):
        self.use_microversion('1.2')
        create = self.client.create_audit
        self.assert_bad_request('memory_basis', create, memory_basis='rss')
        self.assert_bad_request('auto_execute', create, auto_execute='yes')
        self.assert_bad_request('dry_run', create, dry_run=True)
        self.assert_bad_request('parameters.colour', create,
                                parameters={'colour': 'blue'})
        self.assert_bad_request('parameters.overload_cpu', create,
                                parameters={'overload_cpu': 'no-such-one'})
        self.assert_bad_request(
            'parameters.overload_cpu_params.threshold', create,
            parameters={'overload_cpu': 'threshold',
                        'overload_cpu_params': {'threshold': 'high'}})
        self.assert_bad_request(
            'parameters.overload_cpu_params', create,
            parameters={'overload_cpu_params': [0.8]})
        self.assert_bad_request(
            'parameters.vm_selection_params.bogus', create,
            parameters={'vm_selection': 'random',
                        'vm_selection_params': {'bogus': 1}})

    @decorators.attr(type=['negative'])
    @decorators.idempotent_id('fb01480d-cef3-4112-bf55-3aa8eb4b1871')
    def test_bad_parameters(self):
        self.assert_bad_request('uuid', self.client.show_audit, 'audit-1')
        self.assert_bad_request('since', self.client.list_audits,
                                since='last week')
        # In UTC, before year 1.
        self.assert_bad_request('since', self.client.list_audits,
                                since='0001-01-01T00:00:00+01:00')
        self.assert_bad_request('sort_key', self.client.list_audits,
                                sort_key='state')
