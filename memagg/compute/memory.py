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

"""The local memory manager: one period of WSS estimation and ballooning.

Every period and for each running VM: balloon statistics and their rates,
the native sampler's window (begun the period before), the VM's own
estimator (the [wss] estimator plug-in), its WSS max-average, then the
[local_policy] plug-in over all managed VMs, and the balloon targets applied
live. A VM without a balloon device or without balloon statistics is
unmanaged: it gets no target and its memory counts as taken.

In observe mode ([compute] mode) the period estimates as in manage mode
but runs no local policy: no VM gets a target, no balloon moves, host
reclaim is not asked, and the reservoir is what the balloons leave where
they are.
"""
import dataclasses
import time

from oslo_log import log as logging

from memagg.compute import qos
from memagg.compute import reclaim as reclaim_mod
from memagg.compute import sampling
from memagg.conf import compute as conf_compute
from memagg.drivers.compute_api import base as compute_api
from memagg.drivers.hypervisor import base as hypervisor
from memagg.drivers.local import base as local_base
from memagg.drivers.local import weights as weights_mod
from memagg.drivers.wss import base as wss_base
from memagg.drivers.wss import maxavg as maxavg_mod

LOG = logging.getLogger(__name__)

NO_BALLOON = 'no balloon device'
NO_STATS = 'no balloon statistics'
#: The local_policy of a managed VM's result in observe mode: nothing set
#: its target.
OBSERVE = conf_compute.OBSERVE


@dataclasses.dataclass
class VmResult:
    """One VM's outcome of a period (MiB). ``estimator`` names what the
    WSS came from ('badis/V/sampler'), or 'unmanaged: <reason>';
    ``local_policy`` what set its balloon target ('cmms/equal'), None for
    an unmanaged VM."""

    uuid: str
    current_mb: int
    wss_mb: int | None = None
    wss_maxavg_mb: int | None = None
    target_mb: int | None = None
    estimator: str | None = None
    local_policy: str | None = None
    managed: bool = True
    shortage: bool = False
    sampler_backend: str | None = None
    sampler_error: str | None = None
    #: Half-width (MiB) of the sampled estimate's confidence interval,
    #: and the pages drawn for it.
    sampler_error_mb: float | None = None
    sampler_pages: int | None = None
    #: The estimate was not fed to the max-average: a warming window (VM
    #: just started, allocation moved) or a lost one the stats stood in for.
    warming: bool = False
    #: Host-side reclaim (memagg.compute.reclaim.VmReclaim), None when off.
    reclaim: object = None


@dataclasses.dataclass
class PeriodResult:
    """The VMs' results by uuid and the node's free memory reservoir: what
    the balloon targets and the unmanaged VMs leave of the guests' memory,
    plus what host reclaim holds paged out (freed as a balloon frees)."""

    vms: dict
    reservoir_mb: int


class _Vm:
    """What the manager keeps about one VM between periods."""

    def __init__(self, uuid, estimator, maxavg, sampler):
        self.uuid = uuid
        self.estimator = estimator
        self.maxavg = maxavg
        self.sampler = sampler
        self.stats_period_set = False
        self.counters = None  # (monotonic time, memoryStats) last period


def reclaimed_mb(results):
    """MiB host reclaim holds paged out of the VMs of ``results`` (their
    VmResult by uuid), rounded as each VM's is reported."""
    return int(round(sum(r.reclaim.reclaimed_mb for r in results.values()
                         if r.reclaim is not None)))


def stats_rates(previous, stats, elapsed_s):
    """Per-second swap_in/swap_out (KiB/s) and major_fault (1/s) since
    ``previous``; None without a previous reading or after a counter
    reset (guest reboot)."""
    if previous is None or elapsed_s <= 0:
        return None
    rates = {}
    for key in ('swap_in', 'swap_out', 'major_fault'):
        if key in stats and key in previous:
            delta = stats[key] - previous[key]
            if delta < 0:
                return None
            rates[key] = delta / elapsed_s
    return rates or None


def unmanaged_reason(dom):
    """Why memagg must leave ``dom`` alone, or None."""
    if not dom.balloon:
        return NO_BALLOON
    stats = dom.memory_stats
    if 'actual' not in stats or 'available' not in stats:
        return NO_STATS
    return None


def guest_memory_mb(conf, host_info):
    """The memory the local policy shares among the host's guests:
    ``[compute] guest_memory_mb``, or the host's memory less what is
    reserved for the host itself."""
    if conf.compute.guest_memory_mb:
        return conf.compute.guest_memory_mb
    return host_info.memory_mb - conf.compute.reserved_host_memory_mb


def _not_truth(estimate, sample, sampler):
    """Whether ``estimate`` must stay out of the max-average: built on a
    warming window of the sampler, or on the balloon statistics standing in
    for a sampler that is about to give its first window or lost the last
    one (their used memory counts page cache, and one such value would
    hold WSS^maxavg up for the whole slice)."""
    if sample is not None and sample.get('warming') \
            and estimate.source == 'sampler':
        return True
    return estimate.source == 'stats' and (sampler.missed or sampler.fresh)


class MemoryManager:
    """Runs the estimation and balloon period of a compute node.

    Loads the estimator and the policy at construction, so invalid [wss] or
    [local_policy] options fail at start, naming the option.
    """

    def __init__(self, driver, conf):
        self.driver = driver
        self.conf = conf
        self.new_estimator = wss_base.load_estimator_factory(conf)
        self.estimator_name = conf.wss.estimator
        self.policy = local_base.load_policy(conf)
        self.sample_size = sampling.SampleSize.from_conf(conf.wss)
        self.qos = qos.WeightResolver(conf)
        self.reclaim = reclaim_mod.HostReclaim(conf)
        self.observe = conf_compute.observing(conf)
        # The VMs found ballooned in observe mode, said once each.
        self._left_ballooned = set()
        # Asked of Nova only when there is reclaim to opt out of.
        self.reclaim_settings = (qos.WeightResolver(
            conf, key=compute_api.HOST_RECLAIM_KEY,
            what='host reclaim setting') if self.reclaim.enabled else None)
        self._vms = {}

    def qos_weight(self, uuid):
        """VM ``uuid``'s memagg:weight as a positive number: class names
        and an unset weight resolved with [local_policy] weights and
        default_weight, as the weighted policy resolves them."""
        params = self.policy.params
        return weights_mod.resolve_weight(self.qos.weight(uuid),
                                          params.weights,
                                          params.default_weight)

    def _vm(self, uuid):
        vm = self._vms.get(uuid)
        if vm is None:
            wss = self.conf.wss
            vm = _Vm(uuid, self.new_estimator(),
                     maxavg_mod.MaxAverage(wss.maxavg_samples,
                                           wss.maxavg_slice_s),
                     sampling.VmSampler(self.driver, uuid,
                                        wss.sampler_pages,
                                        wss.sampler_backend,
                                        size=self.sample_size,
                                        split_huge_pages=(
                                            wss.sampler_split_huge_pages),
                                        per_page=(
                                            self.reclaim.needs_idle_pages)))
            self._vms[uuid] = vm
        return vm

    def _ensure_stats_period(self, vm, dom):
        period = self.conf.compute.balloon_stats_period
        if vm.stats_period_set or dom.stats_period == period:
            vm.stats_period_set = True
            return
        try:
            self.driver.set_stats_period(dom.uuid, period)
        except hypervisor.Unsupported as exc:
            LOG.warning('VM %s: cannot set its balloon statistics period: '
                        '%s', dom.uuid, exc)
        vm.stats_period_set = True

    def run_period(self, host_info, domains, now, ghosts=None):
        """Estimate, decide and apply one period for ``domains``
        (DomainInfo) on the host of ``host_info``; return a PeriodResult.
        ``ghosts``: {uuid: GhostPeriod} of the VMs with a remote-swap disk
        (their swap ghost this period). A domain that vanishes in the
        middle is dropped from the result."""
        results, policy_vms, to_begin = {}, [], []
        taken_mb = 0
        ghosts = ghosts or {}
        # Every VM's window ends, then every VM's next one begins: the
        # damon_paddr samplers share one kdamond, asked once and restarted
        # once a period (sampling.commit_windows).
        for dom in domains:
            try:
                result, vm_memory, vm = self._observe(
                    dom, now, ghosts.get(dom.uuid))
            except hypervisor.DomainGone:
                LOG.info('VM %s vanished during the period; skipped',
                         dom.uuid)
                self.forget(dom.uuid)
                continue
            results[dom.uuid] = result
            if vm is not None:
                to_begin.append(vm)
            if vm_memory is None:
                taken_mb += result.current_mb
            else:
                policy_vms.append(vm_memory)
        self._forget_gone(domains)
        for vm in to_begin:
            try:
                vm.sampler.begin()
            except hypervisor.DomainGone:
                LOG.info('VM %s vanished during the period; skipped',
                         vm.uuid)
                self.forget(vm.uuid)
                del results[vm.uuid]
                policy_vms = [v for v in policy_vms if v.uuid != vm.uuid]
                continue
            # The sampler opens at its first begin(), or fails to.
            results[vm.uuid].sampler_backend = vm.sampler.backend_name
            results[vm.uuid].sampler_error = vm.sampler.error
        sampling.commit_windows()

        budget = guest_memory_mb(self.conf, host_info) - taken_mb
        if self.observe:
            return self._leave_balloons(results, policy_vms, budget)
        decision = self.policy.compute(policy_vms, budget)
        for vm_memory in policy_vms:
            target = decision.targets[vm_memory.uuid]
            result = results[vm_memory.uuid]
            result.target_mb = target
            if target == vm_memory.m_cur_mb:
                continue
            try:
                self.driver.set_balloon(vm_memory.uuid, target)
                LOG.debug('VM %s: balloon %d -> %d MiB', vm_memory.uuid,
                          vm_memory.m_cur_mb, target)
            except hypervisor.DomainGone:
                LOG.info('VM %s vanished before its balloon moved',
                         vm_memory.uuid)
                self.forget(vm_memory.uuid)
                del results[vm_memory.uuid]
            except hypervisor.Unsupported as exc:
                LOG.warning('VM %s: balloon not moved: %s', vm_memory.uuid,
                            exc)
        self._reclaim(results)
        return PeriodResult(vms=results, reservoir_mb=(
            decision.reservoir_mb + reclaimed_mb(results)))

    def _leave_balloons(self, results, policy_vms, budget):
        """Observe mode's end of a period: every balloon stays where it
        is (a VM found ballooned is said so once) and no host reclaim
        runs; the reservoir is what the balloons leave of ``budget``."""
        for vm_memory in policy_vms:
            results[vm_memory.uuid].local_policy = OBSERVE
            if (vm_memory.m_cur_mb < vm_memory.m_init_mb
                    and vm_memory.uuid not in self._left_ballooned):
                self._left_ballooned.add(vm_memory.uuid)
                LOG.info('VM %s: balloon left at %d of %d MiB ([compute] '
                         'mode = observe moves no balloon)', vm_memory.uuid,
                         vm_memory.m_cur_mb, vm_memory.m_init_mb)
        return PeriodResult(vms=results, reservoir_mb=budget - sum(
            vm_memory.m_cur_mb for vm_memory in policy_vms))

    def _reclaim(self, results):
        """Host-side reclaim of every VM after its balloon moved: a VM
        whose balloon is being lowered holds its reclaim limit (the
        balloon first)."""
        if not self.reclaim.enabled:
            return
        psi = reclaim_mod.psi_some()
        for uuid in list(results):
            result, vm = results[uuid], self._vms.get(uuid)
            if vm is None:
                continue
            moving = (result.target_mb is not None
                      and result.target_mb < result.current_mb)
            try:
                result.reclaim = self.reclaim.period(
                    uuid, vm.sampler.memory, vm.sampler.idle_n,
                    result.wss_maxavg_mb, moving, psi=psi,
                    setting=self.reclaim_settings.weight(uuid))
            except hypervisor.DomainGone:
                LOG.info('VM %s vanished during host reclaim; forgotten',
                         uuid)
                self.forget(uuid)
                del results[uuid]

    def _observe(self, dom, now, ghost=None):
        """(VmResult, VmMemory or None when unmanaged, the _Vm whose
        sampler is to begin its next window or None) of one domain;
        ``ghost``: its GhostPeriod when it has a remote-swap disk."""
        reason = unmanaged_reason(dom)
        vm = self._vm(dom.uuid)
        if dom.balloon:
            self._ensure_stats_period(vm, dom)
        if reason is not None:
            return self._observe_unmanaged(dom, vm, reason, now)

        stats = dom.memory_stats
        m_cur = stats['actual'] // 1024
        clock = time.monotonic()
        rates = None
        if vm.counters is not None:
            rates = stats_rates(vm.counters[1], stats, clock - vm.counters[0])
        vm.counters = (clock, dict(stats))

        sample = vm.sampler.collect(m_cur)
        self._observe_idle(vm, sample)
        estimate = vm.estimator.estimate(wss_base.Observation(
            uuid=dom.uuid, m_cur_mb=m_cur, m_init_mb=dom.max_memory_mb,
            max_mb=dom.max_memory_mb, stats=dict(stats), stats_rates=rates,
            sampler=sample, ghost=ghost, has_remote_swap=ghost is not None,
            period_s=self.conf.compute.collect_interval, now=now))
        not_truth = (vm.estimator.needs_sampler
                     and _not_truth(estimate, sample, vm.sampler))
        # Host reclaim's cold set needs the sampler whatever the estimator.
        sampling_on = (vm.estimator.needs_sampler
                       or self.reclaim.needs_idle_pages)
        if not sampling_on:
            vm.sampler.close()
        maxavg = vm.maxavg.add(now, None if not_truth else estimate.wss_mb)
        parts = [self.estimator_name, estimate.state]
        if estimate.source != self.estimator_name:
            parts.append(estimate.source)
        label = '/'.join(p for p in parts if p)
        result = VmResult(
            uuid=dom.uuid, current_mb=m_cur, wss_mb=estimate.wss_mb,
            wss_maxavg_mb=maxavg, estimator=label[:64],
            local_policy=self.policy.label[:64], shortage=estimate.shortage,
            sampler_backend=vm.sampler.backend_name,
            sampler_error=vm.sampler.error,
            sampler_error_mb=sample.get('error_mb') if sample else None,
            sampler_pages=sample.get('n') if sample else None,
            warming=not_truth)
        LOG.debug('VM %s: m_cur %d MiB, WSS %s (%s), max-average %s, '
                  'sample %s', dom.uuid, m_cur, estimate.wss_mb, label,
                  maxavg, sample)
        return result, local_base.VmMemory(
            uuid=dom.uuid, m_init_mb=dom.max_memory_mb, m_cur_mb=m_cur,
            wss_mb=estimate.wss_mb, wss_maxavg_mb=maxavg,
            max_mb=dom.max_memory_mb, weight=self.qos.weight(dom.uuid),
            shortage=estimate.shortage), (
                vm if sampling_on else None)

    def _observe_unmanaged(self, dom, vm, reason, now):
        """A VM memagg cannot balloon: no target, its memory counts as
        taken. With host reclaim on its sampler keeps running: its accessed
        memory is its WSS (the promotion SLO's base) and its idle pages
        the cold set."""
        result = VmResult(uuid=dom.uuid, current_mb=dom.current_memory_mb,
                          estimator='unmanaged: %s' % reason, managed=False)
        if not self.reclaim.enabled:
            vm.sampler.close()
            return result, None, None
        sample = vm.sampler.collect(dom.current_memory_mb)
        self._observe_idle(vm, sample)
        wss = None
        if sample is not None and sample.get('accessed_mb') is not None:
            wss = round(sample['accessed_mb'])
        warming = sample is None or bool(sample.get('warming'))
        result.wss_mb = wss
        result.wss_maxavg_mb = vm.maxavg.add(now, None if warming else wss)
        result.warming = warming
        result.sampler_backend = vm.sampler.backend_name
        result.sampler_error = vm.sampler.error
        return result, None, vm

    def _observe_idle(self, vm, sample):
        if sample is not None:
            self.reclaim.observe(vm.uuid, vm.sampler.idle_pages,
                                 vm.sampler.accessed_pages,
                                 sample.get('window_s'))

    def forget(self, uuid):
        """Drop what is kept about VM ``uuid`` (it is gone)."""
        self.qos.forget(uuid)
        self.reclaim.forget(uuid)
        self._left_ballooned.discard(uuid)
        if self.reclaim_settings is not None:
            self.reclaim_settings.forget(uuid)
        vm = self._vms.pop(uuid, None)
        if vm is not None:
            vm.sampler.close()

    def _forget_gone(self, domains):
        present = {dom.uuid for dom in domains}
        for uuid in [u for u in self._vms if u not in present]:
            self.forget(uuid)

    def close(self):
        for uuid in list(self._vms):
            self.forget(uuid)
