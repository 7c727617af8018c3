"""Client side of memagg-scheduler's RPC API."""
from memagg.common import rpc
from memagg.conf import CONF


class SchedulerAPI:
    """Calls to memagg-scheduler on topic ``[scheduler] topic``.

    API version history:

    * 1.0 - Initial version: report, report_batch, ping
    """

    VERSION = '1.0'

    def __init__(self, transport=None):
        """``transport`` defaults to the process's (memagg.common.rpc)."""
        self.client = rpc.Client(CONF.scheduler.topic, self.VERSION,
                                 transport=transport)

    def report(self, ctxt, report):
        """Send one ComputeReport (cast: no reply is awaited)."""
        self.client.cast(ctxt, 'report', report=report)

    def report_batch(self, ctxt, reports):
        """Send several ComputeReports in one message (cast)."""
        self.client.cast(ctxt, 'report_batch', reports=reports)

    def ping(self, ctxt, timeout=None):
        """Return the answering scheduler's host and binary; raise
        RPCTimeout when none answers within ``timeout`` seconds."""
        return self.client.call(ctxt, 'ping', timeout=timeout)
