"""Client side of memagg-scheduler's RPC API."""
from memagg.common import rpc
from memagg.conf import CONF


class SchedulerAPI:
    """Calls to memagg-scheduler on topic ``[scheduler] topic``.

    API version history:

    * 1.0 - Initial version: report, report_batch, ping
    * 1.1 - run_audit, execute_audit
    """

    VERSION = '1.1'

    #: Attempts to reach the bus before a cast of the API gives up, so that
    #: a request fails (503) rather than hang while RabbitMQ is down.
    API_CAST_RETRY = 2

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

    def run_audit(self, ctxt, audit_uuid, retry=API_CAST_RETRY):
        """Ask for pending audit ``audit_uuid`` to be planned (cast).

        Raises ServiceUnavailable when the bus cannot be reached in
        ``retry`` attempts (None: keep trying).
        """
        self.client.cast(ctxt, 'run_audit', version='1.1', retry=retry,
                         audit_uuid=audit_uuid)

    def execute_audit(self, ctxt, audit_uuid, retry=API_CAST_RETRY):
        """Ask for recommended audit ``audit_uuid``'s plan to be executed
        (cast); raises like run_audit."""
        self.client.cast(ctxt, 'execute_audit', version='1.1', retry=retry,
                         audit_uuid=audit_uuid)
