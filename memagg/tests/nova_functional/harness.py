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

"""The base class of the tests against a real Nova: Nova's services and
Placement as Nova's own functional tests start them, memagg's API and DB
beside them, and what the tests need from both.
"""
import os
import sys
import threading

import fixtures
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint
from nova import conf as nova_conf
from nova.tests.functional import integrated_helpers
from openstack import connection as sdk_connection
from openstack.placement.v1 import _proxy as placement_proxy
from oslo_config import fixture as config_fixture

from memagg.api import app as api_app
from memagg.api import server as api_server
from memagg.common import context as memagg_context
from memagg.conf import CONF
from memagg.db import facade as db_facade
from memagg.db import migration as db_migration
from memagg.db import reports as db_reports
from memagg.drivers.compute_api import nova as nova_compute_api
from memagg.nova import conf as memagg_nova_conf

NOVA_CONF = nova_conf.CONF
memagg_nova_conf.register_opts(NOVA_CONF)

#: Memory of every compute of Nova's MediumFakeDriver, MiB.
HOST_MEMORY_MB = 8192
#: nova.conf's filters: Nova's defaults and memagg's.
ENABLED_FILTERS = ['ComputeFilter', 'ComputeCapabilitiesFilter',
                   'ImagePropertiesFilter', 'RealMemoryFilter']
AVAILABLE_FILTERS = ['nova.scheduler.filters.all_filters',
                     'memagg.nova.filters.RealMemoryFilter']
WEIGHERS = ['memagg.nova.weights.RealMemoryWeigher']
#: Memory nova-compute keeps for the host ([DEFAULT]
#: reserved_host_memory_mb), and memagg-compute reports as reserved.
RESERVED_MB = 512


class MemaggNovaTestCase(integrated_helpers.ProviderUsageBaseTestCase):
    """Nova API, conductor and scheduler with memagg's filter and weigher,
    Placement, and memagg's API on loopback; computes are started by the
    tests (:meth:`start_hosts`).

    ``memagg_filters`` False leaves Nova's scheduler as shipped, for the
    benchmark's comparison.
    """

    compute_driver = 'fake.MediumFakeDriver'
    memagg_filters = True
    #: nova.conf [memagg] options the test case sets.
    memagg_options = {}

    def setUp(self):
        self._memagg_setup()
        self.flags(reserved_host_memory_mb=RESERVED_MB,
                   initial_ram_allocation_ratio=1.0)
        if self.memagg_filters:
            self.flags(available_filters=AVAILABLE_FILTERS,
                       enabled_filters=ENABLED_FILTERS,
                       weight_classes=WEIGHERS, group='filter_scheduler')
            self.flags(auth_type='none', endpoint_override=self.memagg_url,
                       group='memagg')
            self.flags(group='memagg', **self.memagg_options)
        # The nova wheel installs api-paste.ini under the prefix, not in a
        # directory oslo.config searches.
        self.flags(api_paste_config=os.path.join(
            sys.prefix, 'etc', 'nova', 'api-paste.ini'), group='wsgi')
        super().setUp()
        self.nova_url = self.api_fixture.admin_api.base_url

    def _clear_attrs(self):
        # Nova's TestCase deletes every public attribute after a test;
        # pytest's unittest support keeps the bound test method there and
        # reads it back after the test.
        kept = self.__dict__.get(self._testMethodName)
        super()._clear_attrs()
        if kept is not None:
            self.__dict__[self._testMethodName] = kept

    # memagg's side

    def _memagg_setup(self):
        conf = self.useFixture(config_fixture.Config(CONF))
        CONF([], project='memagg', default_config_files=[])
        self.memagg_conf = conf
        tmp = self.useFixture(fixtures.TempDir()).path
        conf.config(connection='sqlite:///%s' % os.path.join(
            tmp, 'memagg.sqlite'), group='database')
        conf.config(auth_strategy='noauth', group='api')
        db_facade.dispose()
        self.addCleanup(db_facade.dispose)
        db_migration.upgrade('head')
        self.ctxt = memagg_context.get_admin_context()
        server = api_server.make_server(api_app.create_app(CONF),
                                        '127.0.0.1', 0)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        self.addCleanup(server.server_close)
        self.addCleanup(thread.join, 10)
        self.addCleanup(server.shutdown)
        self.memagg_url = api_server.url(server)

    def report(self, host, vms, memory_mb=HOST_MEMORY_MB,
               lendable_mb=0, cpu_util=0.05):
        """memagg-compute's report of ``host``: ``vms`` are (server,
        booked MiB, WSS MiB) with servers as Nova's API shows them."""
        db_reports.report_ingest(self.ctxt, dict(
            name=host, memory_mb=memory_mb, reserved_mb=RESERVED_MB,
            vcpus=10, cpu_util=cpu_util, free_reservoir_mb=lendable_mb,
            lendable_mb=lendable_mb), [dict(
                uuid=server['id'], name=server['name'],
                project_id=server['tenant_id'], status='active',
                booked_mb=booked, current_mb=booked, wss_mb=wss,
                wss_maxavg_mb=wss, cpu_util=cpu_util, vcpus=1)
                for server, booked, wss in vms], [],
            host_sample=dict(cpu_util=cpu_util,
                             mem_used_mb=sum(w for _, _, w in vms)))

    # Nova's side

    def start_hosts(self, *names):
        """A nova-compute per name (the fake driver of compute_driver)."""
        for name in names:
            self._start_compute(name)

    def flavor(self, memory_mb, expected_wss_mb=None):
        """A flavor of ``memory_mb`` and 1 vCPU; its id."""
        extra = (None if expected_wss_mb is None
                 else {'memagg:expected_wss_mb': str(expected_wss_mb)})
        return self._create_flavor(memory_mb=memory_mb, vcpu=1, disk=1,
                                   ephemeral=0, extra_spec=extra)

    def boot(self, flavor_id, host=None, expected_state='ACTIVE'):
        """A server of ``flavor_id`` (on ``host`` when named: Nova's
        scheduler still checks it), once it reaches ``expected_state``."""
        return self._create_server(flavor_id=flavor_id, networks='none',
                                   host=host, expected_state=expected_state)

    def host_of(self, server_id):
        """The compute host Nova's API shows server ``server_id`` on."""
        return self.api.get_server(server_id)['OS-EXT-SRV-ATTR:host']

    def _nova_headers(self):
        # What Nova's stubbed Keystone middleware (OSAPIFixture) reads.
        return {'X-Auth-User': 'admin',
                'X-Auth-Project-Id': self.api_fixture.project_id,
                'X-Roles': 'reader,member,admin'}

    def compute_api(self):
        """memagg's nova compute API driver on this Nova, as its admin."""
        self.memagg_conf.config(auth_type='none', group='nova')
        self.memagg_conf.config(endpoint_override=self.nova_url, group='nova')
        driver = nova_compute_api.NovaComputeApi(CONF)
        driver.connection.session.additional_headers.update(
            self._nova_headers())
        return driver

    def placement_connection(self):
        """openstacksdk against this Placement, as its admin."""
        endpoint = self.placement.fixture.endpoint
        session = ks_session.Session(
            auth=token_endpoint.Token(endpoint, 'admin'))
        connection = sdk_connection.Connection(
            session=session, app_name='memagg-tests',
            placement_endpoint_override=endpoint)
        # Nova's TestCase (its OpenStackSDKFixture) turns every
        # Connection's placement into a bare REST adapter; memagg's job
        # needs openstacksdk's Placement proxy, as it has in production.
        proxy = connection.config.get_session_client(
            'placement', constructor=placement_proxy.Proxy)
        proxy._connection = connection
        connection._proxies['placement'] = proxy
        return connection
