"""Client side of memagg-compute's RPC API: one server per compute host."""
from memagg.common import rpc

TOPIC = 'memagg-compute'


class ComputeAPI:
    """Calls to the memagg-compute of one host (topic memagg-compute,
    server = the host's ``[DEFAULT] host``).

    API version history:

    * 1.0 - Initial version: ping, get_host_status
    """

    VERSION = '1.0'

    def __init__(self):
        self.client = rpc.Client(TOPIC, self.VERSION)

    def ping(self, ctxt, host, timeout=None):
        """Return ``{'host', 'binary'}`` from ``host``'s memagg-compute;
        raise RPCTimeout when it does not answer within ``timeout`` s."""
        return self.client.call(ctxt, 'ping', server=host, timeout=timeout)

    def get_host_status(self, ctxt, host, timeout=None):
        """Return a ComputeReport of ``host`` read from its hypervisor now."""
        return self.client.call(ctxt, 'get_host_status', server=host,
                                timeout=timeout)
