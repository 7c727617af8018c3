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
   ask memagg-scheduler for (plan_period, a pure function);
3. once the report is sent, asks the scheduler (act): a grant for each VM
   still short of memory once the host has nothing left for it; the
   reclaim of what this host lends beyond its lendable memory; the release
   of the grants of VMs gone. A failed request is tried again on a later
   period, with a doubling wait.

memagg-scheduler calls back (the compute RPC API 1.1): prepare_slabs and
free_slabs on a donor, attach_grant and reclaim_slabs on the consumer; and
for a VM live-migrating with its grants (1.2, memagg.scheduler.
grant_moves): adopt_grant on the destination, drop_export on the host the
VM left (or never reached), grant_status on either.
Those run on RPC threads while the periodic thread may be waiting on the
scheduler, so the state shared with them is behind a lock.

memagg-swapd keeps the exports; memagg-compute only remembers which VM
each grant belongs to, and finds that again after a restart from the path
of the export's local copy (<state_dir>/local/<instance>/<grant>.img, read
back with EXPORT_DESCRIBE). It never drops an export when it starts or
stops.
"""
import dataclasses
import math
import os
import re
import threading
import time

from oslo_log import log as logging

from memagg.common import exceptions
from memagg.compute import swapd
from memagg.drivers.hypervisor import base as hypervisor
from memagg.drivers.remote_budget import base as budget_base
from memagg.drivers.remote_budget import fixed as budget_fixed
from memagg.drivers.wss import base as wss_base
from memagg.drivers.wss import ghost as ghost_mod
from memagg.drivers.wss import swap_ghost

LOG = logging.getLogger(__name__)

MIB = 1024 * 1024

#: Periods in a row a VM with an export must be missing from the host
#: before its grant is released: a domain caught between two listings is
#: not taken for gone.
GONE_PERIODS = 2

# Slab states whose slabs no longer hold the grant's pages on a donor.
_ENDED_SLABS = frozenset(('released', 'reclaimed', 'failed', 'freed'))

_HEX64 = re.compile(r'^[0-9a-fA-F]{64}$')
# A wrapped page key: native/swapd/keywrap.h's SD_KW_BLOB_LEN bytes.
WRAPPED_HEX_LEN = 186
_HEX_WRAPPED = re.compile(r'^[0-9a-fA-F]{%d}$' % WRAPPED_HEX_LEN)
_UUID = re.compile(r'^[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}$')


@dataclasses.dataclass
class Grant:
    """A grant with an export on this host (the consumer side).
    ``instance_uuid`` is None when it cannot be told; ``remote_mb``: MiB of
    its slabs still on donors (0 when not known), ``slab_size_mb`` their
    size."""

    uuid: str
    instance_uuid: str | None
    socket: str | None = None
    serial: str | None = None
    target_dev: str | None = None
    remote_mb: int = 0
    slab_size_mb: int = 0


@dataclasses.dataclass
class RemoteUse:
    """What memagg-compute knows of one VM's remote memory in a period:
    ``held_mb``, MiB its grants hold on donors; ``swap_ins``, this period's
    swap-ins of its exports (the swap ghost); ``limit_mb``, its remote
    limit of the period before (None for a VM new to the policy)."""

    held_mb: int = 0
    swap_ins: int = 0
    limit_mb: int | None = None


@dataclasses.dataclass
class Plan:
    """What one period decided (sizes in MiB).

    ``allocate``: [(instance uuid, size)] to ask grants for; ``reclaim_mb``:
    what this host lends beyond its lendable memory; ``release``: grants
    whose VM is gone; ``limits``: {instance uuid: remote limit} of the
    running VMs; ``excess_mb``: how far the limits the remote budget
    policy wanted went beyond the host's remote budget.
    """

    lendable_mb: int
    allocate: list = dataclasses.field(default_factory=list)
    reclaim_mb: int = 0
    release: list = dataclasses.field(default_factory=list)
    limits: dict = dataclasses.field(default_factory=dict)
    excess_mb: int = 0


def short_of_memory(result):
    """Whether VmResult ``result`` is of a managed VM short of memory that
    this host cannot cover: its estimator sees a shortage and the local
    policy's target stays below its WSS (the host's budget is spent, or
    the VM is at its maximum size)."""
    return bool(result.managed and result.shortage
                and result.wss_mb is not None and result.target_mb is not None
                and result.target_mb < result.wss_mb)


def plan_period(period, domains, grants, donor, reserve_mb, max_ratio,
                auto_grant=True, policy=None, use=None):
    """The Plan of one period.

    ``period``: the MemoryManager's PeriodResult; ``domains``: this
    period's DomainInfo; ``grants``: {instance uuid: Grant} of the VMs
    with an export; ``donor``: memagg-swapd's DONOR_STATS (bytes), None
    when it does not answer; ``policy``: the remote budget plug-in (None:
    fixed); ``use``: {instance uuid: RemoteUse} (a VM missing holds
    nothing remotely, saw no swap-ins and is new to the policy).

    Local needs first: nothing is lendable while a VM of this host is
    short of memory; otherwise the free reservoir less ``reserve_mb``, at
    most memagg-swapd's capacity. What memagg-swapd lends beyond that is
    to be reclaimed.

    Each running VM's remote limit comes from ``policy``, its cap being
    ``max_ratio`` of its booked memory and the host's budget that of
    budget_base.remote_budget_mb. A short VM asks for what its limit has
    beyond what it holds; a VM with a grant asks again only when the
    policy tops up.
    """
    short = [uuid for uuid, result in period.vms.items()
             if short_of_memory(result)]
    lendable = 0
    reclaim = 0
    if donor is not None:
        if not short:
            lendable = max(0, min(period.reservoir_mb - reserve_mb,
                                  donor['capacity'] // MIB))
        used_mb = math.ceil(donor['used'] / MIB)
        reclaim = max(0, used_mb - lendable)
    policy = policy or budget_fixed.FixedBudget()
    use = use or {}
    caps = {dom.uuid: int(max_ratio * dom.max_memory_mb) for dom in domains}
    held = {uuid: use[uuid].held_mb for uuid in caps if uuid in use}
    budgets = policy.limits(
        [budget_base.VmRemote(
            uuid=uuid, cap_mb=cap, used_mb=held.get(uuid, 0),
            swap_ins=use[uuid].swap_ins if uuid in use else 0,
            short=uuid in short,
            limit_mb=use[uuid].limit_mb if uuid in use else None)
         for uuid, cap in caps.items()],
        budget_base.remote_budget_mb(caps, held, auto_grant))
    allocate = []
    if auto_grant:
        for uuid in short:
            size = budgets.limits.get(uuid, 0) - held.get(uuid, 0)
            if size > 0 and (policy.tops_up or uuid not in grants):
                allocate.append((uuid, size))
    return Plan(lendable_mb=lendable, allocate=allocate, reclaim_mb=reclaim,
                limits=budgets.limits, excess_mb=budgets.excess_mb)


class Backoff:
    """When each key's next try is due: after a failure ``interval`` s,
    doubling with each failure in a row up to ten times that."""

    def __init__(self, interval, clock=time.monotonic):
        self.interval = interval
        self.clock = clock
        self._due = {}

    def ready(self, key):
        due = self._due.get(key)
        return due is None or self.clock() >= due[0]

    def failed(self, key):
        """Record a failure; return the seconds until the next try."""
        failures = self._due.get(key, (0, 0))[1] + 1
        wait = min(self.interval * 2 ** (failures - 1), 10 * self.interval)
        self._due[key] = (self.clock() + wait, failures)
        return wait

    def succeeded(self, key):
        self._due.pop(key, None)


def local_copy_path(state_dir, instance_uuid, grant_uuid):
    """Where grant ``grant_uuid``'s durability copy of VM
    ``instance_uuid`` lives."""
    return os.path.join(state_dir, 'local', instance_uuid,
                        grant_uuid + '.img')


def instance_of_local_copy(path):
    """The instance uuid in a path made by local_copy_path, or None."""
    parts = os.path.normpath(path or '').split(os.sep)
    if len(parts) >= 3 and parts[-3] == 'local' and _UUID.match(parts[-2]):
        return parts[-2]
    return None


def _check_uuid(field, value):
    if not isinstance(value, str) or not _UUID.match(value):
        raise exceptions.InvalidParameter(
            field=field, reason='%r is not a uuid' % (value,))


def _check_indexes(field, indexes, allow_none=True):
    if indexes is None and allow_none:
        return None
    if (not isinstance(indexes, (list, tuple)) or not indexes
            or not all(isinstance(i, int) and not isinstance(i, bool)
                       and i >= 0 for i in indexes)):
        raise exceptions.InvalidParameter(
            field=field, reason='%r is not a non-empty list of slab '
                                'indexes (integers >= 0)' % (indexes,))
    return list(indexes)


class RemoteMemory:
    """This host's side of remote memory: see the module's docstring.

    ``scheduler_api``: memagg-scheduler's RPC client (SchedulerAPI 1.2);
    ``client``: the SwapdClient (made from [swapd] when None).

    The [reservoir] remote_budget plug-in is loaded here: a bad name or
    parameter raises InvalidParameter naming the option, at start.
    """

    def __init__(self, driver, host, conf, scheduler_api, client=None,
                 clock=time.monotonic):
        self.driver = driver
        self.host = host
        self.conf = conf
        self.scheduler_api = scheduler_api
        self.client = client or swapd.SwapdClient(
            conf.swapd.control_socket, conf.swapd.control_timeout)
        self.backoff = Backoff(conf.swapd.retry_interval, clock)
        self.ghost_params = wss_base.params_from_conf(conf)
        self.remote_budget = budget_base.load(conf)
        self.lendable_mb = 0
        self.plan = None
        self._limits = {}       # instance uuid -> remote limit, last period
        self._swap_ins = {}     # instance uuid -> swap-ins, this period
        self._grants = {}       # grant uuid -> Grant
        self._trackers = {}     # instance uuid -> GhostTracker
        self._missing = {}      # grant uuid -> periods its VM was missing
        self._recovered = False
        self._swapd_down = False
        self._lock = threading.Lock()

    @property
    def enabled(self):
        return self.conf.swapd.enabled

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
                instance = instance_of_local_copy(described.get('local'))
                if instance is None:
                    LOG.warning('Export of grant %s: no VM found from its '
                                'local copy %s; left alone', uuid,
                                described.get('local'))
                slab_mb = described.get('slab_size', 0) // MIB
                on_donors = ({s['index'] for s in described.get('slabs', ())}
                             - set(described.get('local_slabs', ())))
                found[uuid] = Grant(
                    uuid=uuid, instance_uuid=instance,
                    serial=hypervisor.swap_serial(uuid),
                    remote_mb=len(on_donors) * slab_mb, slab_size_mb=slab_mb)
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
                                           []).append(grant.uuid)
            for uuid in [u for u in self._trackers if u not in running]:
                del self._trackers[uuid]
        result = {}
        try:
            for instance, grant_uuids in by_instance.items():
                tracker = self._trackers.get(instance)
                if tracker is None:
                    tracker = swap_ghost.new_tracker(self.ghost_params)
                    self._trackers[instance] = tracker
                for grant_uuid in grant_uuids:
                    self._drain(grant_uuid, tracker)
                result[instance] = tracker.end_period()
        except swapd.SwapdUnavailable as exc:
            self._down(exc)
            return {}
        if by_instance:
            self._up()
        return result

    def _drain(self, grant_uuid, tracker):
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

    def plan_period(self, period, domains):
        """Decide this period's Plan (kept for act()); return the lendable
        memory to report."""
        if not self.enabled:
            self.plan = Plan(lendable_mb=0)
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
        plan = plan_period(period, domains, grants, donor,
                           reservoir.donor_reserve_mb,
                           reservoir.max_remote_ratio,
                           auto_grant=self.conf.swapd.auto_grant and answers,
                           policy=self.remote_budget,
                           use=self._remote_use(domains))
        if plan.excess_mb > 0:
            # Happens only while the host may not ask, and then every
            # period: not worth more than debug.
            LOG.debug('Remote limits of this host\'s VMs exceed its '
                      'remote budget by %d MiB: scaled down to it',
                      plan.excess_mb)
        plan.release = self._gone(domains)
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
                held[grant.instance_uuid] = (held.get(grant.instance_uuid, 0)
                                             + grant.remote_mb)
        swap_ins, self._swap_ins = self._swap_ins, {}
        return {dom.uuid: RemoteUse(held_mb=held.get(dom.uuid, 0),
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
        for grant_uuid in plan.release:
            self._try(('release', grant_uuid), self._release, ctxt,
                      grant_uuid)
        if plan.reclaim_mb > 0:
            self._try('reclaim', self._reclaim, ctxt, plan.reclaim_mb)
        for instance_uuid, size_mb in plan.allocate:
            self._try(('allocate', instance_uuid), self._allocate, ctxt,
                      instance_uuid, size_mb)

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
                self._grants[grant['uuid']] = Grant(
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

    # -- RPC from memagg-scheduler (compute API 1.1) ---------------------

    def _check_enabled(self):
        if not self.enabled:
            raise exceptions.ServiceUnavailable(
                reason='remote memory is disabled on %s ([swapd] enabled '
                       '= False)' % self.host)

    def _swapd(self, func, *args, **kwargs):
        """func(...) of the SwapdClient, its unavailability as
        ServiceUnavailable and EINVAL as InvalidParameter."""
        try:
            result = func(*args, **kwargs)
        except swapd.SwapdUnavailable as exc:
            self._down(exc)
            raise exceptions.ServiceUnavailable(
                reason='memagg-swapd of %s does not answer: %s'
                % (self.host, exc))
        except swapd.SwapdError as exc:
            if exc.errno_name == 'EINVAL':
                field = exc.message.split(':', 1)[0]
                raise exceptions.InvalidParameter(field=field,
                                                  reason=exc.message)
            raise
        self._up()
        return result

    def prepare_slabs(self, grant_uuid, secret, slab_size_mb, indexes):
        """Allocate donated slabs ``indexes`` of ``slab_size_mb`` MiB for
        grant ``grant_uuid`` keyed by ``secret`` (64 hex): {endpoint,
        slabs: [{index, remote_addr, rkey}]}, only those allocated (fewer:
        partial; none: out of memory)."""
        self._check_enabled()
        _check_uuid('grant_uuid', grant_uuid)
        if not isinstance(secret, str) or not _HEX64.match(secret):
            raise exceptions.InvalidParameter(
                field='secret', reason='must be 64 hexadecimal digits')
        if (not isinstance(slab_size_mb, int) or isinstance(slab_size_mb,
                                                            bool)
                or slab_size_mb <= 0):
            raise exceptions.InvalidParameter(
                field='slab_size_mb',
                reason='%r is not a positive integer' % (slab_size_mb,))
        indexes = _check_indexes('indexes', indexes, allow_none=False)
        try:
            reply = self._swapd(self.client.grant_alloc, grant_uuid, secret,
                                slab_size_mb * MIB, indexes)
        except swapd.SwapdError as exc:
            if exc.errno_name != 'ENOMEM':
                raise
            LOG.warning('Grant %s: no slab of %d could be lent: %s',
                        grant_uuid, len(indexes), exc.message)
            return {'endpoint': None, 'slabs': []}
        slabs = [{'index': s['index'], 'remote_addr': s['remote_addr'],
                  'rkey': reply['rkey']} for s in reply['slabs']]
        LOG.info('Grant %s: lent %d of %d slabs of %d MiB at %s',
                 grant_uuid, len(slabs), len(indexes), slab_size_mb,
                 reply['endpoint'])
        return {'endpoint': reply['endpoint'], 'slabs': slabs}

    def free_slabs(self, grant_uuid, indexes=None):
        """Free donated slabs of ``grant_uuid`` (all when None): {freed}.
        An unknown grant frees nothing."""
        self._check_enabled()
        _check_uuid('grant_uuid', grant_uuid)
        indexes = _check_indexes('indexes', indexes)
        try:
            freed = self._swapd(self.client.grant_free, grant_uuid, indexes)
        except swapd.SwapdError as exc:
            if exc.errno_name != 'ENOENT':
                raise
            freed = 0
        return {'freed': freed}

    def reclaim_slabs(self, grant_uuid, indexes=None):
        """Serve slabs ``indexes`` (all when None) of this host's export
        of ``grant_uuid`` from its local copy from now on: {reclaimed}.
        An unknown export reclaims nothing."""
        self._check_enabled()
        _check_uuid('grant_uuid', grant_uuid)
        indexes = _check_indexes('indexes', indexes)
        try:
            reclaimed = self._swapd(self.client.export_reclaim, grant_uuid,
                                    indexes)
        except swapd.SwapdError as exc:
            if exc.errno_name != 'ENOENT':
                raise
            reclaimed = 0
        with self._lock:
            grant = self._grants.get(grant_uuid)
            if grant is not None:
                # What memagg-swapd reclaims now was on a donor until now.
                grant.remote_mb = max(
                    0, grant.remote_mb - reclaimed * grant.slab_size_mb)
        return {'reclaimed': reclaimed}

    def attach_grant(self, grant):
        """Create grant ``grant``'s export (dict of the Scheduler API) and
        hot-plug it into its VM: {socket, serial, target_dev}. Idempotent:
        an export or disk already there is reused. When the hot-plug
        fails, an export made by this call is dropped again and the error
        raised."""
        self._check_enabled()
        uuid, instance, key, slab_size_mb, slabs = _grant_fields(grant)
        swapd_conf = self.conf.swapd
        serial = hypervisor.swap_serial(uuid)
        local = local_copy_path(swapd_conf.state_dir, instance, uuid)
        try:
            os.makedirs(os.path.dirname(local), exist_ok=True)
        except OSError as exc:
            raise exceptions.ServiceUnavailable(
                reason='cannot make the local copy\'s directory %s: %s; '
                       'check [swapd] state_dir' % (os.path.dirname(local),
                                                    exc))
        created = False
        if uuid in self._swapd(self.client.export_list):
            export = self._existing_export(uuid)
        else:
            size = (max(s['index'] for s in slabs) + 1) * slab_size_mb * MIB
            try:
                export = self._swapd(self.client.export_create, uuid, key,
                                     size, slab_size_mb * MIB, local, slabs,
                                     seal=swapd_conf.encrypt_pages)
                created = True
            except swapd.SwapdError as exc:
                if exc.errno_name != 'EEXIST':
                    raise
                export = self._existing_export(uuid)
        try:
            target = self.driver.attach_swap_disk(
                instance, export['socket'], export['name'], serial,
                reconnect_delay=swapd_conf.reconnect_delay)
        except Exception:
            if created:
                LOG.warning('Grant %s: hot-plug into VM %s failed; dropping '
                            'the export just made', uuid, instance)
                try:
                    self.client.export_drop(uuid, delete=True)
                except (swapd.SwapdError, swapd.SwapdUnavailable) as exc:
                    LOG.warning('Export of grant %s not dropped: %s', uuid,
                                exc)
            raise
        with self._lock:
            self._grants[uuid] = Grant(uuid=uuid, instance_uuid=instance,
                                       socket=export['socket'],
                                       serial=serial, target_dev=target,
                                       remote_mb=len(slabs) * slab_size_mb,
                                       slab_size_mb=slab_size_mb)
            self._missing.pop(uuid, None)
        self.backoff.succeeded(('allocate', instance))
        LOG.info('Grant %s of VM %s attached as %s (%d slabs, NBD %s)',
                 uuid, instance, target, len(slabs), export['socket'])
        return {'socket': export['socket'], 'serial': serial,
                'target_dev': target}

    def adopt_grant(self, grant):
        """Serve grant ``grant``'s export (the grant dict, secret and
        slabs included) for its VM migrating to this host, without
        hot-plugging: the disk comes with the VM. memagg-swapd reads every
        page from the donors; the local copy is rebuilt only once the
        migration is over (rebuild_grant), so that the rebuild does not
        compete with the migration's copy (ALGORITHMS.md §5). Idempotent.
        Returns {socket, name}; a sealed grant (the dict's ``sealed``, as
        the source's grant_status says) adds key_offer, the public key the
        source's wrap_page_key seals the page key for."""
        self._check_enabled()
        uuid, instance, key, slab_size_mb, slabs = _grant_fields(grant)
        sealed = grant.get('sealed', False)
        if not isinstance(sealed, bool):
            raise exceptions.InvalidParameter(field='grant.sealed',
                                              reason='must be true or false')
        local = local_copy_path(self.conf.swapd.state_dir, instance, uuid)
        exists = uuid in self._swapd(self.client.export_list)
        if exists and sealed and self._key_pending(uuid):
            # Its key offer went to a call that failed; no guest uses an
            # export still waiting for its key, so a new one replaces it.
            self._swapd(self.client.export_drop, uuid, delete=True)
            exists = False
        if exists:
            export = self._existing_export(uuid)
        else:
            try:
                os.makedirs(os.path.dirname(local), exist_ok=True)
                # A copy left by an earlier attempt would pass for pages
                # written here.
                if os.path.exists(local):
                    os.unlink(local)
            except OSError as exc:
                raise exceptions.ServiceUnavailable(
                    reason='cannot prepare the local copy %s: %s; check '
                           '[swapd] state_dir' % (local, exc))
            size = (max(s['index'] for s in slabs) + 1) * slab_size_mb * MIB
            try:
                export = self._swapd(self.client.export_create, uuid, key,
                                     size, slab_size_mb * MIB, local, slabs,
                                     adopt=True, seal=sealed)
            except swapd.SwapdError as exc:
                if exc.errno_name != 'EEXIST':
                    raise
                export = self._existing_export(uuid)
        with self._lock:
            self._grants[uuid] = Grant(
                uuid=uuid, instance_uuid=instance, socket=export['socket'],
                serial=hypervisor.swap_serial(uuid),
                remote_mb=len(slabs) * slab_size_mb,
                slab_size_mb=slab_size_mb)
            self._missing.pop(uuid, None)
        LOG.info('Grant %s of VM %s adopted for its live migration (%d '
                 'slabs, NBD %s)', uuid, instance, len(slabs),
                 export['socket'])
        return export

    def _key_pending(self, uuid):
        return bool(self._swapd(self.client.export_stats,
                                uuid).get('key_pending', 0))

    def wrap_page_key(self, grant_uuid, offer):
        """Grant ``grant_uuid``'s page key sealed for ``offer`` (the key
        offer of the host its VM migrates to): {wrapped}. NotFound
        without an export."""
        if not isinstance(offer, str) or not _HEX64.match(offer):
            raise exceptions.InvalidParameter(
                field='offer', reason='must be 64 hexadecimal digits (the '
                                      'destination\'s key_offer)')
        wrapped = self._on_export(
            lambda uuid: self.client.export_key_wrap(uuid, offer),
            grant_uuid)
        return {'wrapped': wrapped}

    def install_page_key(self, grant_uuid, wrapped):
        """Keep the page key ``wrapped`` (from the migration source's
        wrap_page_key) for this host's adopted export of ``grant_uuid``:
        {}. NotFound without an export; InvalidParameter when it does not
        open with this export's key offer."""
        if not isinstance(wrapped, str) or not _HEX_WRAPPED.match(wrapped):
            raise exceptions.InvalidParameter(
                field='wrapped', reason='must be %d hexadecimal digits (the '
                                        'source\'s wrap_page_key)'
                                        % WRAPPED_HEX_LEN)
        try:
            self._on_export(
                lambda uuid: self.client.export_key_install(uuid, wrapped),
                grant_uuid)
        except swapd.SwapdError as exc:
            if exc.errno_name != 'EBADMSG':
                raise
            raise exceptions.InvalidParameter(
                field='wrapped', reason='does not open with this host\'s key '
                                        'offer for grant %s; adopt the '
                                        'grant again' % grant_uuid)
        return {}

    def drop_export(self, grant_uuid):
        """Drop this host's export of ``grant_uuid`` and its local copy
        without releasing the grant: its VM lives on another host now, or
        never arrived here. Returns {dropped}."""
        self._check_enabled()
        _check_uuid('grant_uuid', grant_uuid)
        try:
            self._swapd(self.client.export_drop, grant_uuid, delete=True)
            dropped = True
        except swapd.SwapdError as exc:
            if exc.errno_name != 'ENOENT':
                raise
            dropped = False
        with self._lock:
            self._grants.pop(grant_uuid, None)
            self._missing.pop(grant_uuid, None)
        return {'dropped': dropped}

    def rebuild_grant(self, grant_uuid):
        """Start rebuilding the local copy of an adopted grant whose VM's
        migration to this host is over. Idempotent (a rebuild running or
        done, or an export that was never adopted, is left as it is).
        Returns {local_copy_left_mb}; NotFound without an export."""
        reply = self._on_export(self.client.export_rebuild, grant_uuid)
        return {'local_copy_left_mb': _pages_mb(reply.get('rebuild_left',
                                                          0))}

    def grant_status(self, grant_uuid):
        """What this host's export of ``grant_uuid`` holds: {stored_mb
        (pages written, on the donors), local_copy_left_mb (durability
        copy still to rebuild), sealed (its pages encrypted with a page
        key only this host has)}. NotFound without an export."""
        stats = self._on_export(self.client.export_stats, grant_uuid)
        return {'stored_mb': _pages_mb(stats.get('stored_pages', 0)),
                'local_copy_left_mb': _pages_mb(stats.get('rebuild_left',
                                                          0)),
                'sealed': bool(stats.get('sealed', 0))}

    def _on_export(self, call, grant_uuid):
        """memagg-swapd's ``call`` on this host's export of
        ``grant_uuid``; NotFound without one."""
        self._check_enabled()
        _check_uuid('grant_uuid', grant_uuid)
        try:
            return self._swapd(call, grant_uuid)
        except swapd.SwapdError as exc:
            if exc.errno_name == 'ENOENT':
                raise exceptions.NotFound(resource='Export', id=grant_uuid)
            raise

    def _existing_export(self, uuid):
        return {'name': 'memagg-swap-%s' % uuid,
                'socket': os.path.join(self.conf.swapd.export_dir,
                                       '%s.sock' % uuid)}


def _pages_mb(pages):
    """MiB of ``pages`` 4 KiB pages, rounded up."""
    return -(-int(pages) * 4096 // MIB)


def _grant_fields(grant):
    """(uuid, instance uuid, secret, slab_size_mb, slabs) of a grant dict,
    its slabs still on donors sorted by index; InvalidParameter naming the
    field that is wrong."""
    if not isinstance(grant, dict):
        raise exceptions.InvalidParameter(field='grant',
                                          reason='must be a grant dict')
    for field in ('uuid', 'instance_uuid', 'secret', 'slab_size_mb',
                  'slabs'):
        if field not in grant:
            raise exceptions.InvalidParameter(
                field='grant.%s' % field, reason='missing')
    _check_uuid('grant.uuid', grant['uuid'])
    _check_uuid('grant.instance_uuid', grant['instance_uuid'])
    if not isinstance(grant['secret'], str) or not _HEX64.match(
            grant['secret']):
        raise exceptions.InvalidParameter(
            field='grant.secret', reason='must be 64 hexadecimal digits')
    if not isinstance(grant['slab_size_mb'], int) or grant[
            'slab_size_mb'] <= 0:
        raise exceptions.InvalidParameter(
            field='grant.slab_size_mb', reason='must be a positive integer')
    slabs = []
    for n, slab in enumerate(grant['slabs'] or ()):
        if slab.get('status') in _ENDED_SLABS:
            continue
        try:
            slabs.append({'index': int(slab['index']),
                          'endpoint': str(slab['endpoint']),
                          'remote_addr': int(slab['remote_addr']),
                          'rkey': int(slab['rkey'])})
        except (KeyError, TypeError, ValueError) as exc:
            raise exceptions.InvalidParameter(
                field='grant.slabs[%d]' % n,
                reason='needs index, endpoint, remote_addr and rkey (%s)'
                % exc)
    if not slabs:
        raise exceptions.InvalidParameter(
            field='grant.slabs', reason='no slab held on a donor')
    slabs.sort(key=lambda s: s['index'])
    return (grant['uuid'], grant['instance_uuid'], grant['secret'],
            grant['slab_size_mb'], slabs)
