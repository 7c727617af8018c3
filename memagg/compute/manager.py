"""memagg-compute's manager: the RPC endpoint of the local manager."""
import oslo_messaging as messaging
from oslo_log import log as logging

from memagg.compute import collector as collector_mod
from memagg.compute import memory as memory_mod
from memagg.conf import CONF
from memagg.drivers.hypervisor import base as hypervisor
from memagg.scheduler import rpcapi as scheduler_rpcapi
from memagg import service

LOG = logging.getLogger(__name__)

BINARY = 'memagg-compute'


class ComputeManager(service.Manager):
    """Every [compute] collect_interval: estimates each VM's WSS, moves
    the balloons by the local policy and reports to memagg-scheduler.

    Invalid [wss] or [local_policy] options raise InvalidParameter here,
    at start, naming the option."""

    target = messaging.Target(version='1.0')

    def __init__(self, host=None, driver=None):
        super().__init__(host)
        self.driver = driver or hypervisor.load(
            CONF.compute.hypervisor_driver, CONF.compute.libvirt_uri)
        self.memory = memory_mod.MemoryManager(self.driver, CONF)
        self.collector = collector_mod.Collector(self.driver, self.host,
                                                 self.memory)
        self.scheduler_api = scheduler_rpcapi.SchedulerAPI()

    def collect_and_report(self):
        """One period: estimate, balloon, cast the report."""
        report = self.collector.run_period()
        self.scheduler_api.report(self.admin_context, report)
        LOG.debug('Reported %d instances and %d WSS samples of %s',
                  len(report.instances), len(report.samples), self.host)

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

    def cleanup_host(self):
        self.memory.close()
        self.driver.close()
