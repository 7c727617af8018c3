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

"""Nova's scheduler with memagg's filter and weigher: boots through Nova's
API onto fake-driver computes, with Placement, as memagg reports them."""
import socket

from nova.scheduler import manager as scheduler_manager
from nova.tests.functional.api import client

from memagg.common import exceptions
from memagg.tests.nova_functional import harness

NO_VALID_HOST = 'No valid host was found'


def _closed_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


class RealMemoryTest(harness.MemaggNovaTestCase):
    """memagg answers; every scheduling request reads it afresh."""

    memagg_options = {'cache_ttl': 0}

    def test_booked_room_admits_but_real_memory_refuses(self):
        # Booked memory at ratio 2 leaves 7,168 MiB; the working sets leave
        # 680 MiB, less than the 2,048 MiB the new flavor expects to use.
        self.flags(initial_ram_allocation_ratio=2.0)
        self.start_hosts('h1')
        big = self.flavor(4096)
        servers = [self.boot(big), self.boot(big)]
        self.report('h1', [(s, 4096, 3500) for s in servers])
        flavor = self.flavor(4096, expected_wss_mb=2048)

        refused = self.boot(flavor, expected_state='ERROR')

        self.assertIn(NO_VALID_HOST, refused['fault']['message'])
        # The refusal was memagg's: once the VMs use less, the same boot
        # lands on the same host.
        self.report('h1', [(s, 4096, 1000) for s in servers])
        admitted = self.boot(flavor)
        self.assertEqual('h1', admitted['OS-EXT-SRV-ATTR:host'])

    def test_boot_lands_on_the_host_with_most_real_free_memory(self):
        self.start_hosts('h1', 'h2', 'h3')
        flavor = self.flavor(2048)
        wss = {'h1': 1800, 'h2': 500, 'h3': 1200}
        for host, used in wss.items():
            server = self.boot(flavor, host=host)
            self.report(host, [(server, 2048, used)])

        server = self.boot(self.flavor(1024))

        # Booked memory is the same on every host: only the working sets
        # tell them apart.
        self.assertEqual('h2', server['OS-EXT-SRV-ATTR:host'])


class _Unreachable(harness.MemaggNovaTestCase):
    """memagg's API is down: nothing listens at [memagg] endpoint_override.
    """

    def setUp(self):
        self.memagg_options = dict(
            self.memagg_options, cache_ttl=0,
            endpoint_override='http://127.0.0.1:%d' % _closed_port())
        super().setUp()


class UnreachableOpenTest(_Unreachable):

    memagg_options = {'on_failure': 'open'}

    def test_boots_proceed_with_a_log_line_saying_why(self):
        self.start_hosts('h1')
        server = self.boot(self.flavor(1024))

        self.assertEqual('h1', server['OS-EXT-SRV-ATTR:host'])
        logged = [line for line in self.stdlog.logger.output.splitlines()
                  if 'memagg' in line and 'open' in line]
        self.assertTrue(logged, 'no line says why the filter let it pass')
        self.assertIn('127.0.0.1', logged[0])


class UnreachableClosedTest(_Unreachable):

    memagg_options = {'on_failure': 'closed'}

    def test_boots_are_refused(self):
        self.start_hosts('h1')
        server = self.boot(self.flavor(1024), expected_state='ERROR')

        self.assertIn(NO_VALID_HOST, server['fault']['message'])


class BadOptionTest(harness.MemaggNovaTestCase):
    """A wrong [memagg] value in nova.conf."""

    def test_stops_nova_scheduler_at_start_naming_the_option(self):
        self.flags(expected_wss_ratio=0, group='memagg')

        # What nova-scheduler builds at start: its manager loads the
        # filters and weighers of nova.conf.
        error = self.assertRaises(exceptions.InvalidParameter,
                                  scheduler_manager.SchedulerManager)

        self.assertIn('[memagg] expected_wss_ratio', str(error))


class ExtraSpecTest(harness.MemaggNovaTestCase):
    """Nova's API checks memagg's flavor extra specs (memagg.nova.
    extra_specs) from microversion 2.86."""

    def test_a_weight_that_is_not_positive_is_refused_naming_it(self):
        flavor = self.flavor(1024)
        self.api.microversion = '2.86'
        self.api.post_extra_spec(
            flavor, {'extra_specs': {'memagg:weight': 'gold'}})
        refused = self.assertRaises(
            client.OpenStackApiException, self.api.post_extra_spec,
            flavor, {'extra_specs': {'memagg:weight': '0'}})

        self.assertEqual(400, refused.response.status_code)
        self.assertIn("memagg:weight = '0' is neither a positive number",
                      refused.response.text)
        self.assertEqual(
            {'memagg:weight': 'gold'},
            self.api.get_flavor(flavor).get('extra_specs'))
