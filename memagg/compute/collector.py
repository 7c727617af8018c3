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

"""Builds the ComputeReport memagg-compute sends every period.

The periodic job (run_period) reads the host and its running guests, lets
the MemoryManager estimate each VM's WSS and move the balloons, and reports
the results with one WssSample per VM that has an estimate. A status read
(collect) reads the host now and shows the last period's estimates and
targets, without running a period. CPU utilisation is a fraction (0..1) of
the host's CPUs, or of the guest's vCPUs, over the time since the previous
read; the first read reports 0. A WSS sample carries the VM's CPU use in
cores (its utilisation times its vCPUs), the unit consolidation rounds
weigh VMs in, and the report the sum of the VMs' resident memory (WSS
max-average) as the host's memory use. Each VM's host reclaim (what it
holds paged out, its promotion rate against the SLO, the mechanism) goes
with its instance, and what it holds paged out and its promotion rate with
its WSS sample.
"""
import re
import threading
import time

from oslo_utils import timeutils

from memagg.common import plugins
from memagg.compute import reclaim as reclaim_mod
from memagg.conf import CONF
from memagg.objects import report as report_obj


def _ratio(numerator, denominator):
    if denominator <= 0:
        return 0.0
    return min(1.0, max(0.0, numerator / denominator))


def _sampler_values(result):
    """The sampler fields of a VM's InstanceReport and WssSample from its
    VmResult (None: no period ran for it yet)."""
    if result is None:
        return {}
    return {'sampler_backend': result.sampler_backend,
            'sampler_error_mb': result.sampler_error_mb,
            'sampler_pages': result.sampler_pages,
            'warming': result.warming}


def _reclaim_values(result):
    """The host reclaim fields of a VM's InstanceReport from its VmResult
    (None: no period ran for it yet); the WssSample takes reclaimed_mb and
    promotion_rate of them."""
    if result is None:
        return {}
    reclaim = result.reclaim if result.reclaim is not None else (
        reclaim_mod.OFF)
    return {'reclaimed_mb': int(round(reclaim.reclaimed_mb)),
            'promotion_rate': reclaim.promotions_per_min,
            'promotion_rate_pct': reclaim.promotion_pct(
                result.wss_maxavg_mb),
            'promotion_slo': reclaim.slo_per_min,
            'reclaim_mechanism': reclaim.label[:255]}


_HISTORY_RECLAIM = ('reclaimed_mb', 'promotion_rate')


def managed_domains(pattern):
    """The predicate on a domain name that [compute] domain_name_regex
    ``pattern`` makes (every name when empty); InvalidParameter naming the
    option when it is no regular expression."""
    if not pattern:
        return lambda name: True
    try:
        regex = re.compile(pattern)
    except re.error as exc:
        plugins.check_option(False, 'compute', 'domain_name_regex',
                             'not a regular expression: %s' % exc)
    return lambda name: regex.match(name) is not None


class Collector:
    """Reads the host through ``driver``; ``memory`` (a MemoryManager)
    runs the estimation and balloon period; ``remote`` (a RemoteMemory,
    optional) feeds it the VMs' swap ghosts and says what this host may
    lend."""

    def __init__(self, driver, host, memory, remote=None):
        self.driver = driver
        self.host = host
        self.memory = memory
        self.remote = remote
        self._host_cpu = None
        self._domain_cpu = {}
        self._last = None
        self._managed = managed_domains(CONF.compute.domain_name_regex)
        # The periodic report and an RPC get_host_status may run at once;
        # each must see the previous CPU counters of the other.
        self._lock = threading.Lock()

    def collect(self):
        """Read the host now; return a ComputeReport with the last period's
        estimates and targets and no new samples."""
        with self._lock:
            now, info, domains = self._read()
            return self._report(now, info, domains, self._last, samples=False)

    def run_period(self):
        """Run one estimation and balloon period; return its ComputeReport
        (with this period's WSS samples)."""
        with self._lock:
            now, info, domains = self._read()
            ghosts = (self.remote.ghost_periods(domains)
                      if self.remote is not None else None)
            self._last = self.memory.run_period(info, domains, now, ghosts)
            if self.remote is not None:
                self.remote.plan_period(self._last, domains)
            return self._report(now, info, domains, self._last, samples=True)

    def _read(self):
        # The one place the domains come in: a domain the option leaves out
        # is never estimated, ballooned, paged out nor reported.
        domains = [dom for dom in self.driver.list_domains()
                   if self._managed(dom.name)]
        return timeutils.utcnow(), self.driver.get_host_info(), domains

    def _report(self, now, info, domains, period, samples):
        results = period.vms if period is not None else {}
        shares = self.remote.tiers.shares_mb if self.remote is not None \
            else {}
        instances, wss_samples = [], []
        wall_ns = time.monotonic_ns()
        domain_cpu = {}
        for dom in domains:
            domain_cpu[dom.uuid] = (dom.cpu_time_ns, wall_ns)
            result = results.get(dom.uuid)
            current = dom.memory_stats.get('actual')
            current_mb = (current // 1024 if current is not None
                          else dom.current_memory_mb)
            cpu_util = self._domain_util(dom, wall_ns)
            sampler = _sampler_values(result)
            reclaim = _reclaim_values(result)
            instances.append(report_obj.InstanceReport(
                uuid=dom.uuid, name=dom.name, project_id=None,
                booked_mb=dom.max_memory_mb, current_mb=current_mb,
                target_mb=result.target_mb if result else None,
                wss_mb=result.wss_mb if result else None,
                wss_maxavg_mb=result.wss_maxavg_mb if result else None,
                estimator=result.estimator if result else None,
                local_policy=result.local_policy if result else None,
                cpu_util=cpu_util, vcpus=dom.vcpus,
                l1_share_mb=shares.get(dom.uuid), **sampler, **reclaim))
            if samples and result is not None and result.wss_mb is not None:
                wss_samples.append(report_obj.WssSample(
                    instance_uuid=dom.uuid, sampled_at=now,
                    wss_mb=result.wss_mb,
                    wss_maxavg_mb=result.wss_maxavg_mb,
                    current_mb=current_mb, target_mb=result.target_mb,
                    estimator=result.estimator,
                    cpu_util=cpu_util * max(dom.vcpus, 0), **sampler,
                    **{k: reclaim[k] for k in _HISTORY_RECLAIM}))
        self._domain_cpu = domain_cpu
        reserved = CONF.compute.reserved_host_memory_mb
        if period is not None:
            reservoir = period.reservoir_mb
        else:
            reservoir = info.free_memory_mb - reserved
        # ledgers() reads the exports' stats, local_room_mb() what they
        # said of the local copies.
        ledgers = self.remote.ledgers() if self.remote is not None else []
        local_room_mb = (self.remote.local_room_mb()
                         if self.remote is not None else None)
        return report_obj.ComputeReport(
            host=self.host, reported_at=now, memory_mb=info.memory_mb,
            reserved_mb=reserved, vcpus=info.vcpus,
            cpu_util=self._host_util(info),
            # Overcommitted targets leave no reservoir, not a negative one.
            free_reservoir_mb=max(0, reservoir),
            # What the last period decided may be lent (nothing without
            # remote memory).
            lendable_mb=(self.remote.lendable_mb
                         if self.remote is not None else 0),
            instances=instances, samples=wss_samples,
            mem_used_mb=sum(report_obj.resident_mb(i) for i in instances),
            ledgers=ledgers, local_room_mb=local_room_mb)

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
