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

"""Remote memory on a compute node: the local side of the global reservoir
(ALGORITHMS.md §4; ARCHITECTURE.md, the swap data path).

This host's memagg-swapd lends slabs of its memory to other hosts' VMs
(the donor side) and serves this host's VMs their remote-swap disks (the
consumer side). Every period memagg-compute:

1. drains each export's swap-ghost stream into its VM's GhostTracker, so
   the estimators see real swap-outs and swap-ins (ghost_periods);
2. after the local policy, works out what this host may lend, each VM's
   remote limit (the [reservoir] remote_budget plug-in) and what it must
   ask memagg-scheduler for (remote_plan.plan_period, a pure function);
3. once the report is sent, asks the scheduler (act): a grant for each VM
   still short of memory once the host has nothing left for it; the
   reclaim of what this host lends beyond its lendable memory; the release
   of the grants of VMs gone; every [reservoir] tier_interval, the moves
   of their slabs between the tiers (memagg.compute.tiers). A failed
   request is tried again on a later period, with a doubling wait
   (backoff).

memagg-scheduler calls back (the compute RPC API 1.1): prepare_slabs and
free_slabs on a donor, attach_grant and reclaim_slabs on the consumer; and
for a VM live-migrating with its grants (1.2, memagg.scheduler.
grant_moves): adopt_grant on the destination, drop_export on the host the
VM left (or never reached), grant_status on either. RemoteMemory answers
them in remote_exports; they run on RPC threads while the periodic thread
may be waiting on the scheduler, so the state shared with them is behind
a lock.

memagg-swapd keeps the exports; memagg-compute only remembers which VM
each grant belongs to (remote_grants), and finds that again after a
restart from the path of the export's local copy
(<state_dir>/local/<instance>/<grant>.img, read back with
EXPORT_DESCRIBE). It never drops an export when it starts or stops.

In observe mode ([compute] mode) the host lends nothing and asks for
nothing: the swap ghosts of the grants attached before are still read
(they are part of the VMs' working sets), and VMs paused on a swap error
are still resumed, but no grant is requested, reclaimed or released, and
the scheduler's calls that would set one up are refused.
"""
import threading
import time

from oslo_log import log as logging

from memagg.common import exceptions
from memagg.compute import backoff as backoff_mod
from memagg.compute import remote_exports
from memagg.compute import remote_grants
from memagg.compute import remote_plan
from memagg.compute import swapd
from memagg.compute import tiers as tiers_mod
from memagg.conf import compute as conf_compute
from memagg.drivers.hypervisor import base as hypervisor
from memagg.drivers.remote_budget import base as budget_base
from memagg.drivers.wss import base as wss_base
from memagg.drivers.wss import ghost as ghost_mod
from memagg.drivers.wss import swap_ghost
from memagg.objects import report as report_obj

LOG = logging.getLogger(__name__)

#: Periods in a row a VM with an export must be missing from the host
#: before its grant is released: a domain caught between two listings is
#: not taken for gone.
GONE_PERIODS = 2


class RemoteMemory(remote_exports.ExportsMixin):
    """This host's side of remote memory: see the module's docstring;
    memagg-scheduler's calls back are ExportsMixin's (remote_exports).

    ``scheduler_api``: memagg-scheduler's RPC client (SchedulerAPI 1.2);
    ``client``: the SwapdClient (made from [swapd] when None).

    The [reservoir] remote_budget plug-in is loaded here: a bad name or
    parameter raises InvalidParameter naming the option, at start.
    """

    def __init__(self, driver, host, conf, scheduler_api, client=None,
                 clock=time.monotonic, weight_of=None):
        self.driver = driver
        self.host = host
        self.conf = conf
        self.scheduler_api = scheduler_api
        self.client = client or swapd.SwapdClient(
            conf.swapd.control_socket, conf.swapd.control_timeout)
        self.backoff = backoff_mod.Backoff(conf.swapd.retry_interval, clock)
        self.ghost_params = wss_base.params_from_conf(conf)
        self.remote_budget = budget_base.load(conf)
        self.tiers = tiers_mod.Tiers(conf, host, self.client, scheduler_api,
                                     weight_of or (lambda uuid: 1.0),
                                     clock=clock)
        self._running = set()
        self.lendable_mb = 0
        self.plan = None
        self._limits = {}       # instance uuid -> remote limit, last period
        self._swap_ins = {}     # instance uuid -> swap-ins, this period
        self._grants = {}       # grant uuid -> Grant
        self._trackers = {}     # instance uuid -> GhostTracker
        self._missing = {}      # grant uuid -> periods its VM was missing
        self._recovered = False
        self._swapd_down = False
        self._stale = set()     # grant uuids with stale slabs: ledgers()
        self._lock = threading.Lock()

    @property
    def enabled(self):
        return self.conf.swapd.enabled

    @property
    def observe(self):
        """[compute] mode is observe: nothing is lent or asked for."""
        return conf_compute.observing(self.conf)

    # -- memagg-swapd's availability, logged once per outage ---------------

    def _down(self, exc):
        if not self._swapd_down:
            LOG.warning('memagg-swapd does not answer (%s): no remote memory '
                        'on this host and no swap ghost for its VMs until '
                        'it does', exc)
        self._swapd_down = True

    def _up(self):
        if self._swapd_down:
            LOG.info('memagg-swapd answers again on %s',
                     self.conf.swapd.control_socket)
        self._swapd_down = False

    # -- start ----------------------------------------------------------

    def recover(self):
        """Find the exports memagg-swapd holds and the VM of each; called
        at start and on each period until memagg-swapd has answered.
        Nothing is dropped."""
        if not self.enabled or self._recovered:
            return
        try:
            uuids = self.client.export_list()
            found = {}
            for uuid in uuids:
                try:
                    described = self.client.export_describe(uuid)
                except swapd.SwapdError as exc:
                    LOG.warning('Export of grant %s not described: %s',
                                uuid, exc)
                    continue
                instance = remote_grants.instance_of_local_copy(
                    described.get('local'))
                if instance is None:
                    LOG.warning('Export of grant %s: no VM found from its '
                                'local copy %s; left alone', uuid,
                                described.get('local'))
                slab_mb = described.get('slab_size', 0) // remote_grants.MIB
                on_donors = ({s['index'] for s in described.get('slabs', ())}
                             - set(described.get('local_slabs', ())))
                found[uuid] = remote_grants.Grant(
                    uuid=uuid, instance_uuid=instance,
                    serial=hypervisor.swap_serial(uuid),
                    remote_mb=len(on_donors) * slab_mb,
                    size_mb=described.get('size', 0) // remote_grants.MIB,
                    slab_size_mb=slab_mb)
        except swapd.SwapdUnavailable as exc:
            self._down(exc)
            return
        self._up()
        with self._lock:
            for uuid, grant in found.items():
                self._grants.setdefault(uuid, grant)
        self._recovered = True
        LOG.info('memagg-swapd holds %d exports for VMs of this host',
                 len(found))

    # -- the period -----------------------------------------------------

    def grants_by_instance(self):
        with self._lock:
            return {g.instance_uuid: g for g in self._grants.values()
                    if g.instance_uuid is not None}

    def ghost_periods(self, domains):
        """{instance uuid: GhostPeriod} of this period for each running VM
        with an export, its swap events drained from memagg-swapd; empty
        while memagg-swapd does not answer. Each VM's swap-ins (matched or
        not) are kept for this period's remote limits."""
        result = self._ghost_periods(domains)
        self._swap_ins = {uuid: ghost.swap_ins + ghost.unmatched_swap_ins
                          for uuid, ghost in result.items()}
        return result

    def _ghost_periods(self, domains):
        if not self.enabled:
            return {}
        self.recover()
        if not self._recovered:
            return {}
        running = {dom.uuid for dom in domains}
        by_instance = {}
        with self._lock:
            for grant in self._grants.values():
                if grant.instance_uuid in running:
                    by_instance.setdefault(grant.instance_uuid,
                                           []).append(grant)
            for uuid in [u for u in self._trackers if u not in running]:
                del self._trackers[uuid]
        result = {}
        try:
            for instance, grants in by_instance.items():
                tracker = self._trackers.get(instance)
                if tracker is None:
                    tracker = swap_ghost.new_tracker(self.ghost_params)
                    self._trackers[instance] = tracker
                for grant in grants:
                    self._drain(grant, tracker)
                result[instance] = tracker.end_period()
        except swapd.SwapdUnavailable as exc:
            self._down(exc)
            return {}
        if by_instance:
            self._up()
        return result

    def _drain(self, grant, tracker):
        grant_uuid = grant.uuid
        try:
            events, dropped = self.client.ghost_all(grant_uuid)
        except swapd.SwapdError as exc:
            LOG.warning('No swap ghost of grant %s this period: %s',
                        grant_uuid, exc)
            return
        if dropped:
            LOG.warning('memagg-swapd dropped %d swap events of grant %s '
                        'before they were read', dropped, grant_uuid)
        tracker.feed([(ghost_mod.SWAP_OUT if kind == swapd.SWAP_OUT
                       else ghost_mod.SWAP_IN, page)
                      for kind, page in events])
        self.tiers.feed(grant, events)

    def ledgers(self):
        """The ledger of each grant this host's memagg-swapd exports, per
        tier (EXPORT_STATS' l1_* and l2_*), for the report: a list of
        GrantLedger; empty while memagg-swapd does not answer. A grant
        whose export is gone has none. The same stats say which grants'
        local copies have stale slabs (for :meth:`local_room_mb`)."""
        if not self.enabled or not self._recovered:
            return []
        with self._lock:
            uuids = sorted(self._grants)
        ledgers, stale = [], set()
        try:
            for uuid in uuids:
                try:
                    stats = self.client.export_stats(uuid)
                except swapd.SwapdError as exc:
                    LOG.debug('No ledger of grant %s this period: %s',
                              uuid, exc)
                    continue
                if stats.get('stale_slabs'):
                    stale.add(uuid)
                ledgers.append(report_obj.GrantLedger(
                    grant_uuid=uuid,
                    **{name: stats.get(name, 0)
                       for name in report_obj.LEDGER_COUNTS}))
        except swapd.SwapdUnavailable as exc:
            self._down(exc)
            return []
        self._note_stale(stale)
        return ledgers

    def _note_stale(self, stale):
        """Keep the uuids of the grants whose local copies have stale
        slabs, saying when they change."""
        if stale == self._stale:
            return
        if stale:
            LOG.warning('The local copies of grants %s missed writes (stale '
                        'slabs: their device failed or filled; see '
                        'memagg-swapd\'s log): no room is reported for new '
                        'grants while they stay', sorted(stale))
        else:
            LOG.info('No local copy has stale slabs any more')
        self._stale = stale

    def local_room_mb(self):
        """MiB this host's local copies' filesystem can take for new
        grants ([swapd] local_copy_reserve_mb kept free, the copies of
        its grants counted at their full size), for the report; None
        without memagg-swapd. 0 while a copy has stale slabs (as the
        report's :meth:`ledgers` found them): its device failed or filled
        under a write, so no grant grows onto it."""
        if not self.enabled:
            return None
        if self._stale:
            return 0
        with self._lock:
            grants = list(self._grants.values())
        return remote_grants.local_room_mb(
            self.conf.swapd.state_dir, self.conf.swapd.local_copy_reserve_mb,
            grants)

    def plan_period(self, period, domains):
        """Decide this period's Plan (kept for act()); return the lendable
        memory to report."""
        if not self.enabled or self.observe:
            self.plan = remote_plan.Plan(lendable_mb=0)
            self.lendable_mb = 0
            return 0
        answers = True
        try:
            donor = self.client.donor_stats()
            self._up()
        except swapd.SwapdUnavailable as exc:
            self._down(exc)
            donor = None
            answers = False
        except swapd.SwapdError as exc:
            # It still serves exports: only lending is off.
            LOG.warning('memagg-swapd gave no DONOR_STATS: %s', exc)
            donor = None
        grants = self.grants_by_instance()
        reservoir = self.conf.reservoir
        # A grant needs this host's memagg-swapd for its export.
        plan = remote_plan.plan_period(
            period, domains, grants, donor, reservoir.donor_reserve_mb,
            reservoir.max_remote_ratio,
            auto_grant=self.conf.swapd.auto_grant and answers,
            policy=self.remote_budget, use=self._remote_use(domains))
        if plan.excess_mb > 0:
            # Happens only while the host may not ask, and then every
            # period: not worth more than debug.
            LOG.debug('Remote limits of this host\'s VMs exceed its '
                      'remote budget by %d MiB: scaled down to it',
                      plan.excess_mb)
        plan.release = self._gone(domains)
        self._running = {dom.uuid for dom in domains}
        self.plan = plan
        self._limits = plan.limits
        self.lendable_mb = plan.lendable_mb
        return plan.lendable_mb

    def _remote_use(self, domains):
        """{instance uuid: RemoteUse} of the running VMs; the swap-ins are
        used once, by the period they were drained in."""
        held = {}
        with self._lock:
            for grant in self._grants.values():
                # Both tiers: memagg-scheduler cuts a request to what the
                # VM's cap leaves of all its slabs.
                held[grant.instance_uuid] = (
                    held.get(grant.instance_uuid, 0)
                    + (grant.size_mb or grant.remote_mb))
        swap_ins, self._swap_ins = self._swap_ins, {}
        return {dom.uuid: remote_plan.RemoteUse(
                    held_mb=held.get(dom.uuid, 0),
                    swap_ins=swap_ins.get(dom.uuid, 0),
                    limit_mb=self._limits.get(dom.uuid))
                for dom in domains}

    def _gone(self, domains):
        running = {dom.uuid for dom in domains}
        gone = []
        with self._lock:
            for grant in self._grants.values():
                if grant.instance_uuid is None:
                    continue
                if grant.instance_uuid in running:
                    self._missing.pop(grant.uuid, None)
                    continue
                missing = self._missing.get(grant.uuid, 0) + 1
                self._missing[grant.uuid] = missing
                if missing >= GONE_PERIODS:
                    gone.append(grant.uuid)
        return gone

    def act(self, ctxt):
        """Make this period's requests to memagg-scheduler (blocking; run
        after the report is sent). Failures are logged and tried again on
        a later period."""
        plan = self.plan
        if plan is None or not self.enabled:
            return
        self.resume_paused()
        if self.observe:
            return
        for grant_uuid in plan.release:
            self._try(('release', grant_uuid), self._release, ctxt,
                      grant_uuid)
        if plan.reclaim_mb > 0:
            self._try('reclaim', self._reclaim, ctxt, plan.reclaim_mb)
        for instance_uuid, size_mb in plan.allocate:
            self._try(('allocate', instance_uuid), self._allocate, ctxt,
                      instance_uuid, size_mb)
        if self.tiers.due():
            self._try('tiers', self.tiers.run, ctxt, self._running_grants(),
                      dict(self._limits))

    def _running_grants(self):
        """{instance uuid: [Grant, ...]} of the running VMs."""
        result = {}
        with self._lock:
            for grant in self._grants.values():
                if grant.instance_uuid in self._running:
                    result.setdefault(grant.instance_uuid, []).append(grant)
        return result

    def resume_paused(self):
        """Resume the VMs paused on an error of their remote-swap disks
        (memagg-swapd was away longer than [swapd] reconnect_delay, or
        libvirt could not ask QEMU to wait) once memagg-swapd serves
        their exports again: QEMU then retries the failed I/O. Asks even
        when memagg-swapd was seen down: its return is what they wait for."""
        try:
            served = set(self.client.export_list())
        except swapd.SwapdUnavailable as exc:
            self._down(exc)
            return
        except swapd.SwapdError as exc:
            LOG.warning('memagg-swapd gave no EXPORT_LIST: %s', exc)
            return
        self._up()
        serials = {}
        with self._lock:
            for grant in self._grants.values():
                if grant.instance_uuid is not None and grant.uuid in served:
                    serials.setdefault(grant.instance_uuid, []).append(
                        grant.serial)
        for instance, disks in serials.items():
            try:
                self.driver.resume_after_swap_error(instance, disks)
            except (hypervisor.DomainGone, hypervisor.Unsupported):
                continue

    def _try(self, key, func, *args):
        if not self.backoff.ready(key):
            return
        try:
            func(*args)
        except Exception as exc:
            wait = self.backoff.failed(key)
            LOG.warning('Remote memory: %s failed: %s; next try in %.0f s',
                        key if isinstance(key, str) else ' '.join(key), exc,
                        wait)
            return
        self.backoff.succeeded(key)

    def _timeout(self):
        return self.conf.swapd.scheduler_timeout

    def _allocate(self, ctxt, instance_uuid, size_mb):
        LOG.info('VM %s is short of memory and this host has none left '
                 'for it: asking for %d MiB of remote memory',
                 instance_uuid, size_mb)
        grant = self.scheduler_api.allocate_remote(
            ctxt, instance_uuid, self.host, size_mb, timeout=self._timeout())
        with self._lock:
            known = self._grants.get(grant['uuid'])
            if known is None:
                self._grants[grant['uuid']] = remote_grants.Grant(
                    uuid=grant['uuid'], instance_uuid=instance_uuid,
                    serial=hypervisor.swap_serial(grant['uuid']),
                    remote_mb=grant.get('granted_mb') or 0,
                    slab_size_mb=grant.get('slab_size_mb') or 0)
        LOG.info('VM %s got grant %s: %s of %s MiB%s', instance_uuid,
                 grant['uuid'], grant.get('granted_mb'),
                 grant.get('requested_mb'),
                 ' (partial: %s)' % grant.get('reason')
                 if grant.get('partial') else '')

    def _reclaim(self, ctxt, size_mb):
        LOG.info('This host lends %d MiB more than it may now: asking for '
                 'them back', size_mb)
        reclaimed = self.scheduler_api.reclaim(ctxt, self.host, size_mb,
                                               timeout=self._timeout())
        LOG.info('%s MiB lent by this host reclaimed', reclaimed)

    def _release(self, ctxt, grant_uuid):
        with self._lock:
            grant = self._grants.get(grant_uuid)
        if grant is None:
            return
        LOG.info('VM %s is gone: releasing grant %s and dropping its '
                 'export', grant.instance_uuid, grant_uuid)
        try:
            # A grant whose VM was live-migrated is not released: the
            # scheduler answers with its new consumer (or Conflict while
            # the migration runs, tried again later).
            released = self.scheduler_api.release_grant(
                ctxt, grant_uuid, consumer_host=self.host,
                timeout=self._timeout())
        except exceptions.NotFound:
            LOG.info('Grant %s was unknown to memagg-scheduler', grant_uuid)
        else:
            if released.get('consumer_host') != self.host:
                LOG.info('Grant %s of VM %s moved to %s: only its export '
                         'here is dropped', grant_uuid, grant.instance_uuid,
                         released.get('consumer_host'))
                self._drop(grant_uuid)
                return
        self._forget_definition(grant)
        self._drop(grant_uuid)

    def _drop(self, grant_uuid):
        """Drop ``grant_uuid``'s export and its local copy, and forget
        it."""
        try:
            self.client.export_drop(grant_uuid, delete=True)
        except swapd.SwapdError as exc:
            if exc.errno_name != 'ENOENT':
                raise
        with self._lock:
            self._grants.pop(grant_uuid, None)
            self._missing.pop(grant_uuid, None)

    def _forget_definition(self, grant):
        """Take the disk out of a shut-off VM's persistent definition, so
        it does not boot against an export that no longer exists."""
        try:
            self.driver.detach_swap_disk(grant.instance_uuid,
                                         grant.serial or
                                         hypervisor.swap_serial(grant.uuid))
        except (hypervisor.DomainGone, hypervisor.Unsupported):
            pass
