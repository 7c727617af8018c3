"""memagg-scheduler's manager: the RPC endpoint of the global manager."""
import oslo_messaging as messaging
from oslo_log import log as logging

from memagg.conf import CONF
from memagg.db import api as db_api
from memagg import service

LOG = logging.getLogger(__name__)

BINARY = 'memagg-scheduler'


class SchedulerManager(service.Manager):
    """Stores compute reports and purges WSS samples past retention."""

    target = messaging.Target(version='1.0')

    @messaging.expose
    def report(self, ctxt, report):
        """Store one ComputeReport (hosts, instances, wss_samples,
        host_samples)."""
        host, instances, samples = report.to_db_values()
        db_api.report_ingest(ctxt, host, instances, samples,
                             reported_at=report.reported_at,
                             host_sample=report.host_sample())

    @messaging.expose
    def report_batch(self, ctxt, reports):
        """Store several ComputeReports, one transaction each."""
        for report in reports:
            self.report(ctxt, report)

    @messaging.expose
    def ping(self, ctxt):
        """Prove this service answers RPC: its host and binary."""
        return {'host': self.host, 'binary': BINARY}

    def purge_wss_samples(self):
        """Delete the WSS samples older than [wss] sample_retention_hours."""
        count = db_api.purge_wss_samples(self.admin_context)
        if count:
            LOG.info('Purged %d WSS samples older than %d hours', count,
                     CONF.wss.sample_retention_hours)

    def periodic_tasks(self):
        return [service.PeriodicTask('purge-wss-samples',
                                     CONF.scheduler.purge_interval,
                                     self.purge_wss_samples)]
