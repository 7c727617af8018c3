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

"""Client side of memagg-compute's RPC API: one server per compute host."""
from memagg.common import rpc
from memagg import objects
from memagg.objects import base as objects_base

TOPIC = 'memagg-compute'


class ComputeAPI:
    """Calls to the memagg-compute of one host (topic memagg-compute,
    server = the host's ``[DEFAULT] host``).

    API version history:

    * 1.0 - Initial version: ping, get_host_status
    * 1.1 - prepare_slabs, free_slabs, attach_grant, reclaim_slabs (remote
      memory)
    * 1.2 - adopt_grant, drop_export, grant_status, migration_stats
      (metadata-only live migration)
    * 1.3 - rebuild_grant (an adopted grant's local copy is rebuilt once
      the migration is over)
    * 1.4 - wrap_page_key, install_page_key (a sealed grant's page key
      follows its VM); grant_status gives sealed, adopt_grant key_offer
    * 1.5 - promote_slab (tiered remote memory: a slab of the local copy
      goes to a donor)
    """

    VERSION = '1.5'

    def __init__(self):
        objects.register_all()
        self.client = rpc.Client(
            TOPIC, self.VERSION,
            serializer=objects_base.MemaggObjectSerializer())

    def ping(self, ctxt, host, timeout=None):
        """Return ``{'host', 'binary'}`` from ``host``'s memagg-compute;
        raise RPCTimeout when it does not answer within ``timeout`` s."""
        return self.client.call(ctxt, 'ping', server=host, version='1.0',
                                timeout=timeout)

    def get_host_status(self, ctxt, host, timeout=None):
        """Return a ComputeReport of ``host`` read from its hypervisor now."""
        return self.client.call(ctxt, 'get_host_status', server=host,
                                version='1.0', timeout=timeout)

    def prepare_slabs(self, ctxt, host, grant_uuid, secret, slab_size_mb,
                      indexes, timeout=None):
        """Have donor ``host`` lend slabs ``indexes`` of ``slab_size_mb``
        MiB for grant ``grant_uuid``, keyed by ``secret`` (64 hex): return
        {endpoint, slabs: [{index, remote_addr, rkey}]} for the slabs it
        could lend (fewer than asked: partial; none: out of memory)."""
        return self.client.call(ctxt, 'prepare_slabs', server=host,
                                version='1.1', timeout=timeout,
                                grant_uuid=grant_uuid, secret=secret,
                                slab_size_mb=slab_size_mb, indexes=indexes)

    def free_slabs(self, ctxt, host, grant_uuid, indexes=None,
                   timeout=None):
        """Have donor ``host`` free grant ``grant_uuid``'s slabs
        ``indexes`` (all when None): return {freed}."""
        return self.client.call(ctxt, 'free_slabs', server=host,
                                version='1.1', timeout=timeout,
                                grant_uuid=grant_uuid, indexes=indexes)

    def attach_grant(self, ctxt, host, grant, timeout=None):
        """Have consumer ``host`` create ``grant``'s export (the grant
        dict, secret and slabs included) and hot-plug it into the VM:
        return {socket, serial, target_dev}."""
        return self.client.call(ctxt, 'attach_grant', server=host,
                                version='1.1', timeout=timeout, grant=grant)

    def reclaim_slabs(self, ctxt, host, grant_uuid, indexes=None,
                      timeout=None):
        """Have consumer ``host`` serve grant ``grant_uuid``'s slabs
        ``indexes`` (all when None) from its local copy from now on:
        return {reclaimed}."""
        return self.client.call(ctxt, 'reclaim_slabs', server=host,
                                version='1.1', timeout=timeout,
                                grant_uuid=grant_uuid, indexes=indexes)

    def promote_slab(self, ctxt, host, grant_uuid, slab, timeout=None):
        """Have consumer ``host`` copy grant ``grant_uuid``'s slab
        ``slab`` ({index, endpoint, remote_addr}: where its donor prepared
        it), served from its local copy until now, to that donor while
        its VM runs: return {pages} (copied). Idempotent: a slab there
        already is not copied again."""
        return self.client.call(ctxt, 'promote_slab', server=host,
                                version='1.5', timeout=timeout,
                                grant_uuid=grant_uuid, slab=slab)

    def adopt_grant(self, ctxt, host, grant, timeout=None):
        """Have ``host``, where ``grant``'s VM is live-migrating, serve
        the grant's export from its donors (the grant dict, secret and
        slabs included), without hot-plug: return {socket, name}, and
        key_offer for a sealed grant (its dict's ``sealed``)."""
        return self.client.call(ctxt, 'adopt_grant', server=host,
                                version='1.2', timeout=timeout, grant=grant)

    def drop_export(self, ctxt, host, grant_uuid, timeout=None):
        """Have ``host`` drop its export of ``grant_uuid`` and local copy
        without releasing the grant: return {dropped}."""
        return self.client.call(ctxt, 'drop_export', server=host,
                                version='1.2', timeout=timeout,
                                grant_uuid=grant_uuid)

    def rebuild_grant(self, ctxt, host, grant_uuid, timeout=None):
        """Have ``host``, where ``grant_uuid``'s VM has just migrated,
        start rebuilding the grant's local copy from the donors:
        {local_copy_left_mb}."""
        return self.client.call(ctxt, 'rebuild_grant', server=host,
                                version='1.3', timeout=timeout,
                                grant_uuid=grant_uuid)

    def wrap_page_key(self, ctxt, host, grant_uuid, offer, timeout=None):
        """Have ``host``, the source of ``grant_uuid``'s VM's migration,
        seal the grant's page key for the destination's key ``offer``:
        return {wrapped}. Only public keys and ciphertext travel."""
        return self.client.call(ctxt, 'wrap_page_key', server=host,
                                version='1.4', timeout=timeout,
                                grant_uuid=grant_uuid, offer=offer)

    def install_page_key(self, ctxt, host, grant_uuid, wrapped,
                         timeout=None):
        """Have ``host``, the destination, open ``wrapped`` (from
        wrap_page_key) and keep the page key of its adopted export of
        ``grant_uuid``: return {}."""
        return self.client.call(ctxt, 'install_page_key', server=host,
                                version='1.4', timeout=timeout,
                                grant_uuid=grant_uuid, wrapped=wrapped)

    def grant_status(self, ctxt, host, grant_uuid, timeout=None):
        """{stored_mb, local_copy_left_mb, sealed} of ``host``'s export of
        ``grant_uuid``."""
        return self.client.call(ctxt, 'grant_status', server=host,
                                version='1.2', timeout=timeout,
                                grant_uuid=grant_uuid)

    def migration_stats(self, ctxt, host, instance_uuid, timeout=None):
        """What ``host``'s hypervisor says the last live migration of
        ``instance_uuid`` cost: {memory_bytes, data_bytes, time_ms,
        downtime_ms} (None where unknown), or None."""
        return self.client.call(ctxt, 'migration_stats', server=host,
                                version='1.2', timeout=timeout,
                                instance_uuid=instance_uuid)
