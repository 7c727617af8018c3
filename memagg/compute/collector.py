"""Builds a ComputeReport from what the hypervisor driver reads.

WSS here comes only from the balloon statistics libvirt reports
(``memoryStats``): the guest's memory in use is ``available - usable``
(``available - unused`` when the guest gives no ``usable``). Guests without
balloon statistics get no WSS and no sample. CPU utilisation is a fraction
(0..1) of the host's CPUs, or of the guest's vCPUs, over the time since the
previous collection; the first collection reports 0.
"""
import threading
import time

from oslo_utils import timeutils

from memagg.conf import CONF
from memagg.objects import report as report_obj

ESTIMATOR = 'libvirt_stats'


def balloon_wss_mb(stats):
    """Memory in use inside the guest in MiB from balloon stats, or None."""
    available = stats.get('available')
    free = stats.get('usable', stats.get('unused'))
    if available is None or free is None:
        return None
    return max(0, available - free) // 1024


def _ratio(numerator, denominator):
    if denominator <= 0:
        return 0.0
    return min(1.0, max(0.0, numerator / denominator))


class Collector:
    """Reads the host through ``driver`` and returns ComputeReports."""

    def __init__(self, driver, host):
        self.driver = driver
        self.host = host
        self._host_cpu = None
        self._domain_cpu = {}
        # The periodic report and an RPC get_host_status may collect at once;
        # each must see the previous CPU counters of the other.
        self._lock = threading.Lock()

    def collect(self):
        """Read the host and its running guests now; return a ComputeReport."""
        with self._lock:
            return self._collect()

    def _collect(self):
        now = timeutils.utcnow()
        info = self.driver.get_host_info()
        domains = self.driver.list_domains()
        instances, samples = [], []
        wall_ns = time.monotonic_ns()
        domain_cpu = {}
        for dom in domains:
            domain_cpu[dom.uuid] = (dom.cpu_time_ns, wall_ns)
            wss = balloon_wss_mb(dom.memory_stats)
            current = dom.memory_stats.get('actual')
            current_mb = (current // 1024 if current is not None
                          else dom.current_memory_mb)
            instances.append(report_obj.InstanceReport(
                uuid=dom.uuid, name=dom.name, project_id=None,
                booked_mb=dom.max_memory_mb, current_mb=current_mb,
                target_mb=None, wss_mb=wss, wss_maxavg_mb=None,
                estimator=ESTIMATOR if wss is not None else None,
                cpu_util=self._domain_util(dom, wall_ns)))
            if wss is not None:
                samples.append(report_obj.WssSample(
                    instance_uuid=dom.uuid, sampled_at=now, wss_mb=wss,
                    wss_maxavg_mb=None, current_mb=current_mb,
                    target_mb=None, estimator=ESTIMATOR))
        self._domain_cpu = domain_cpu
        reserved = CONF.compute.reserved_host_memory_mb
        return report_obj.ComputeReport(
            host=self.host, reported_at=now, memory_mb=info.memory_mb,
            reserved_mb=reserved, vcpus=info.vcpus,
            cpu_util=self._host_util(info),
            free_reservoir_mb=max(0, info.free_memory_mb - reserved),
            # Nothing is lent before the reservoir manager decides what may.
            lendable_mb=0, instances=instances, samples=samples)

    def _host_util(self, info):
        if info.cpu_busy_ns is None:
            return 0.0
        previous, self._host_cpu = self._host_cpu, (info.cpu_busy_ns,
                                                    info.cpu_total_ns)
        if previous is None:
            return 0.0
        return _ratio(info.cpu_busy_ns - previous[0],
                      info.cpu_total_ns - previous[1])

    def _domain_util(self, dom, wall_ns):
        previous = self._domain_cpu.get(dom.uuid)
        if previous is None or dom.vcpus <= 0:
            return 0.0
        return _ratio(dom.cpu_time_ns - previous[0],
                      (wall_ns - previous[1]) * dom.vcpus)
