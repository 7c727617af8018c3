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

"""memagg-compute's manager: the RPC endpoint of the local manager."""
import dataclasses

import oslo_messaging as messaging
from oslo_log import log as logging

from memagg.common import exceptions
from memagg.compute import collector as collector_mod
from memagg.compute import memory as memory_mod
from memagg.compute import remote as remote_mod
from memagg.conf import CONF
from memagg.drivers.hypervisor import base as hypervisor
from memagg.scheduler import rpcapi as scheduler_rpcapi
from memagg import service

LOG = logging.getLogger(__name__)

BINARY = 'memagg-compute'


class ComputeManager(service.Manager):
    """Every [compute] collect_interval: estimates each VM's WSS (with the
    swap ghost of VMs with remote swap), moves the balloons by the local
    policy, reports to memagg-scheduler, then asks it for the remote
    memory the period called for (memagg.compute.remote).

    Its RPC endpoints run on the RPC server's thread pool, so the
    scheduler's calls back (attach_grant while the periodic thread waits
    on allocate_remote) are answered meanwhile.

    Invalid [wss] or [local_policy] options raise InvalidParameter here,
    at start, naming the option.

    With [compute] mode = observe it measures and reports as ever but
    changes nothing (see memagg.compute.memory and memagg.compute.remote):
    prepare_slabs and attach_grant raise Conflict."""

    target = messaging.Target(version='1.5')

    def __init__(self, host=None, driver=None, swapd_client=None):
        super().__init__(host)
        self.driver = driver or hypervisor.load(
            CONF.compute.hypervisor_driver, CONF.compute.libvirt_uri)
        self.memory = memory_mod.MemoryManager(self.driver, CONF)
        self.scheduler_api = scheduler_rpcapi.SchedulerAPI()
        self.remote = remote_mod.RemoteMemory(
            self.driver, self.host, CONF, self.scheduler_api,
            client=swapd_client, weight_of=self.memory.qos_weight)
        self.collector = collector_mod.Collector(self.driver, self.host,
                                                 self.memory, self.remote)

    def init_host(self):
        if self.memory.observe:
            LOG.info('[compute] mode = observe: %s measures and reports its '
                     'VMs and changes nothing', self.host)
        # The exports memagg-swapd kept while this service was down.
        self.remote.recover()

    def collect_and_report(self):
        """One period: estimate, balloon, send the report (a notification,
        or the RPC cast while pinned below scheduler API 1.6: neither waits
        for memagg-scheduler), then the remote-memory requests (which may
        wait on it)."""
        report = self.collector.run_period()
        try:
            self.scheduler_api.report(self.admin_context, report)
        except exceptions.ServiceUnavailable as exc:
            # The next period's report carries the state anew; the
            # remote-memory requests go on without this one.
            LOG.warning('Report of %s not sent: %s', self.host, exc)
        else:
            LOG.debug('Reported %d instances and %d WSS samples of %s',
                      len(report.instances), len(report.samples),
                      self.host)
        self.remote.act(self.admin_context)

    def periodic_tasks(self):
        return [service.PeriodicTask('collect', CONF.compute.collect_interval,
                                     self.collect_and_report)]

    @messaging.expose
    def ping(self, ctxt):
        """Prove this service answers RPC: its host and binary."""
        return {'host': self.host, 'binary': BINARY}

    @messaging.expose
    def get_host_status(self, ctxt):
        """A ComputeReport read from the hypervisor now (not stored)."""
        return self.collector.collect()

    @messaging.expose
    def prepare_slabs(self, ctxt, grant_uuid, secret, slab_size_mb,
                      indexes):
        """Lend slabs ``indexes`` for a grant (donor side):
        {endpoint, slabs: [{index, remote_addr, rkey}]}, fewer when out of
        memory."""
        return self.remote.prepare_slabs(grant_uuid, secret, slab_size_mb,
                                         indexes)

    @messaging.expose
    def promote_slab(self, ctxt, grant_uuid, slab):
        """Copy a slab of this host's export to the donor that prepared
        it (consumer side): {pages}."""
        return self.remote.promote_slab(grant_uuid, slab)

    @messaging.expose
    def free_slabs(self, ctxt, grant_uuid, indexes=None):
        """Free lent slabs of a grant (all when None): {freed}."""
        return self.remote.free_slabs(grant_uuid, indexes)

    @messaging.expose
    def attach_grant(self, ctxt, grant):
        """Create the grant's export and hot-plug it into its VM:
        {socket, serial, target_dev}."""
        return self.remote.attach_grant(grant)

    @messaging.expose
    def reclaim_slabs(self, ctxt, grant_uuid, indexes=None):
        """Serve a grant's slabs (all when None) from the local copy from
        now on, so their donors may free them: {reclaimed}."""
        return self.remote.reclaim_slabs(grant_uuid, indexes)

    @messaging.expose
    def adopt_grant(self, ctxt, grant):
        """Serve the export of a grant whose VM is live-migrating to this
        host, from the donors: {socket, name[, key_offer]}."""
        return self.remote.adopt_grant(grant)

    @messaging.expose
    def rebuild_grant(self, ctxt, grant_uuid):
        """Start rebuilding the local copy of a grant whose VM has just
        migrated here: {local_copy_left_mb}."""
        return self.remote.rebuild_grant(grant_uuid)

    @messaging.expose
    def drop_export(self, ctxt, grant_uuid):
        """Drop this host's export of a grant whose VM is elsewhere, and
        its local copy, without releasing the grant: {dropped}."""
        return self.remote.drop_export(grant_uuid)

    @messaging.expose
    def grant_status(self, ctxt, grant_uuid):
        """{stored_mb, local_copy_left_mb, sealed} of this host's export of
        a grant."""
        return self.remote.grant_status(grant_uuid)

    @messaging.expose
    def wrap_page_key(self, ctxt, grant_uuid, offer):
        """A grant's page key sealed for a migration destination's key
        offer: {wrapped}."""
        return self.remote.wrap_page_key(grant_uuid, offer)

    @messaging.expose
    def install_page_key(self, ctxt, grant_uuid, wrapped):
        """Keep the page key ``wrapped`` for this host's adopted export of
        a grant: {}."""
        return self.remote.install_page_key(grant_uuid, wrapped)

    @messaging.expose
    def migration_stats(self, ctxt, instance_uuid):
        """What the hypervisor says the last live migration of a domain
        on this host cost (hypervisor.MigrationStats as a dict), or
        None."""
        try:
            stats = self.driver.migration_stats(instance_uuid)
        except (hypervisor.DomainGone, hypervisor.Unsupported) as exc:
            LOG.info('No statistics of the migration of %s: %s',
                     instance_uuid, exc)
            return None
        return None if stats is None else dataclasses.asdict(stats)

    def cleanup_host(self):
        # memagg-swapd's exports stay: the guests keep swapping to them.
        self.memory.close()
        self.driver.close()
