"""GET /v1/services against a deployed memagg."""
from tempest.lib import decorators

from tempest_plugin.tests.api import base


class ServicesTest(base.BaseMemaggTest):

    @decorators.idempotent_id('5f0c7a52-3f0e-4d7e-9b1f-2c1b8f0d6a11')
    def test_list_services(self):
        body = self.client.list_services()

        services = body['services']
        binaries = {s['binary'] for s in services}
        # devstack starts both on the controller; each heartbeats at once.
        self.assertIn('memagg-scheduler', binaries)
        self.assertIn('memagg-compute', binaries)
        for service in services:
            self.assertIn(service['state'], ('up', 'down'))

    @decorators.idempotent_id('a3d9e2b4-8c61-4f0a-b7de-6e5f4c3b2a10')
    def test_list_services_paginates(self):
        first = self.client.list_services(limit=1)['services']

        self.assertEqual(1, len(first))
        rest = self.client.list_services(marker=first[0]['id'])['services']
        self.assertNotIn(first[0]['id'], [s['id'] for s in rest])
