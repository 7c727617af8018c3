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

"""A consolidation round, end to end: an audit asked for through the API,
planned by memagg-scheduler from what the compute nodes reported, and
shown with its ordered actions and why each is there.

The plan is not executed: executing it migrates instances through Nova,
which a test must not do to a cloud it shares.
"""
import re

from tempest.lib import decorators

from tempest_plugin.common import waiters
from tempest_plugin.tests.api import base

# Power on, then migrations, then power off (ALGORITHMS, Neat's order).
ACTION_ORDER = ('power_on', 'migrate', 'power_off')
ACTION_REASON = re.compile(r'^(overload|underload):(cpu|memory|cpu\+memory)$')


class ConsolidationScenarioTest(base.BaseMemaggTest):
    """As the API tests' base class: the admin's client at microversion
    1.2, the first with POST /v1/audits."""

    min_microversion = '1.2'

    @decorators.attr(type=['slow'])
    @decorators.idempotent_id('cade8df6-c939-4dc1-b60f-e52cadf87c99')
    def test_audit_planned_with_ordered_actions(self):
        created = self.client.create_audit(memory_basis='wss')['audit']
        self.assertEqual('pending', created['state'])

        audit = waiters.wait_for_audit_state(self.client, created['uuid'])

        self.assertEqual('recommended', audit['state'], audit['reason'])
        self.assertTrue(audit['reason'])
        actions = audit['actions']
        self.assertEqual(list(range(len(actions))),
                         [a['sequence'] for a in actions])
        kinds = [ACTION_ORDER.index(a['action_type']) for a in actions]
        self.assertEqual(sorted(kinds), kinds, actions)
        for action in actions:
            self.assertRegex(action['reason'], ACTION_REASON)
            self.assertEqual('pending', action['state'])
            if action['action_type'] == 'migrate':
                self.assertIsNotNone(action['instance_uuid'])
                self.assertNotEqual(action['source_host'],
                                    action['dest_host'])
        if audit['unplaced'] is not None:
            self.assertTrue(audit['unplaced']['instances'] or
                            audit['unplaced']['hosts'])
        recommended = self.client.list_audits(
            state='recommended', since=audit['created_at'])['audits']
        self.assertIn(audit['uuid'], [a['uuid'] for a in recommended])
