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

"""Consolidation rounds in memagg-scheduler: an audit is planned from what
the compute nodes reported and its plan is stored (ALGORITHMS.md §3.5).

:func:`collect` turns the DB into the HostStates the round planner
(memagg.scheduler.consolidation) reads; :func:`run_audit` plans one audit
and stores its ordered actions, or why it failed.

What a round sees:

* Hosts that reported within [DEFAULT] service_down_time seconds (an older
  report means a compute node that is down, and neither its VMs nor its
  capacity can be counted on), and standby hosts (powered off by a plan,
  so silent) as inactive hosts a plan may wake, with no VMs.
* A host's histories are its last [consolidation] history_length host
  samples: cpu is the fraction of its CPUs in use, memory the sum of its
  VMs' WSS max-average over its usable memory (memory_mb - reserved_mb +
  the memory granted to its VMs x [consolidation] remote_weight).
* A VM's cpu history is its last history_length samples in cores; its
  memory is its WSS max-average (else its latest WSS, else its current
  size less what host reclaim holds paged out).
* With memory_basis ``booked`` the round sees memory as Neat did: a VM
  weighs its booked memory in detection and placement, and a host's memory
  history is its VMs' booked memory, which is flat, as no past of it is
  kept. VM selection still ranks VMs by their resident memory, what a live
  migration copies (ALGORITHMS.md §3.3).
* Recent migrations (:func:`recent`) are the rows of the migrations
  table: a VM last moved when its latest migration that did not fail was
  queued, whoever asked for it (a round's plan or an operator's POST
  /v1/migrations); a host took part in the migrations queued within the
  hour with it as source or destination, whatever came of them.

What is stored: an audit an operator asked for (POST /v1/audits) is always
stored, whatever its plan. A periodic round (:class:`PeriodicRounds`, every
[consolidation] interval) plans first and stores an audit only when there
is something to look at: a plan with actions, or a failure whose reason
differs from the previous periodic round's. A round with nothing to do,
and a round failing again as the previous one did, store nothing and are
logged once, when the outcome changes (at debug after that). The previous
outcome is kept in memory: the first periodic failure after a start is
stored again.
"""
import datetime

from oslo_log import log as logging
from oslo_utils import timeutils
from oslo_utils import uuidutils

from memagg.common import coordination
from memagg.common import exceptions
from memagg.conf import CONF
from memagg.db import audits as db_audits
from memagg.db import grants as db_grants
from memagg.db import hosts as db_hosts
from memagg.db import instances as db_instances
from memagg.db import migrations as db_migrations
from memagg.db import samples as db_samples
from memagg.drivers.consolidation import base
from memagg.objects import report as report_obj
from memagg.scheduler import consolidation
from memagg.scheduler import plans
from memagg.scheduler import round_budget

LOG = logging.getLogger(__name__)

# audits.state
PENDING = 'pending'
PLANNING = 'planning'
RECOMMENDED = 'recommended'
FAILED = 'failed'

WSS = 'wss'
BOOKED = 'booked'

_WORDS = {'mem': 'memory'}


def resident_mb(instance):
    """What ``instance`` (an Instance row) keeps in RAM, in MiB, as rounds,
    the Placement job and GET /v1/host_usages count it: its WSS
    max-average, else its latest WSS, else its current size less what host
    reclaim holds paged out (report.in_use_mb)."""
    for value in (instance.wss_maxavg_mb, instance.wss_mb):
        if value is not None:
            return value
    if instance.current_mb is None:
        return 0
    return report_obj.in_use_mb(instance.current_mb, instance.reclaimed_mb)


def collect(context, group=None, memory_basis=WSS, now=None):
    """The HostStates of a round, and the hosts left out of it.

    ``group`` is the [consolidation] option group (default
    CONF.consolidation). Returns ``(hosts, skipped)``: a list of HostState
    ordered by name, and a dict host -> why it cannot take part (a host
    that reported no CPUs or no usable memory).
    """
    group = group if group is not None else CONF.consolidation
    now = now or timeutils.utcnow()
    since = now - datetime.timedelta(seconds=CONF.service_down_time)
    rows = db_hosts.hosts_for_round(context, since)
    granted = db_grants.remote_mb_by_consumer(context)
    skipped = {}
    hosts = []
    for row in rows:
        usable = (row.memory_mb - row.reserved_mb
                  + granted.get(row.name, 0) * group.remote_weight)
        if row.vcpus <= 0 or usable <= 0:
            skipped[row.name] = (
                'reported %d CPUs and %d MiB usable memory: it can neither '
                'give nor take VMs' % (row.vcpus, usable))
            continue
        hosts.append((row, usable))

    active = [row.name for row, _ in hosts if row.state != 'standby']
    instances = db_instances.instances_on_hosts(context, active)
    samples = db_samples.host_samples_latest(context, active,
                                             group.history_length)
    vm_cpu = db_samples.instance_cpu_latest(
        context, [i.uuid for i in instances], group.history_length)
    vms_of = {name: [] for name in active}
    for inst in instances:
        # A VM without CPU samples (a 1.0 compute node) counts its last
        # reported use.
        cpu = vm_cpu[inst.uuid] or [inst.cpu_util * inst.vcpus]
        # Resident memory whatever the basis, as selection ranks by it;
        # under booked, detection and placement count booked_mb instead.
        vms_of[inst.host].append(base.VmState(
            uuid=inst.uuid, cpu_history=cpu,
            wss_maxavg_mb=float(resident_mb(inst)),
            booked_mb=float(inst.booked_mb), remote_mb=float(inst.remote_mb)))

    states = []
    for row, usable in hosts:
        if row.state == 'standby':
            states.append(base.HostState(
                name=row.name, cpu_total=float(row.vcpus),
                mem_usable_mb=float(usable), cpu_history=[], mem_history=[],
                active=False))
            continue
        vms = vms_of[row.name]
        history = samples[row.name]
        if history:
            cpu = [c for c, _ in history]
            mem = [m / usable for _, m in history]
        else:
            # No host sample yet (a 1.0 compute node): its last report.
            cpu = [row.cpu_util]
            mem = [sum(vm.wss_maxavg_mb for vm in vms) / usable]
        if memory_basis == BOOKED:
            mem = [sum(vm.booked_mb for vm in vms) / usable] * len(cpu)
        states.append(base.HostState(
            name=row.name, cpu_total=float(row.vcpus),
            mem_usable_mb=float(usable), cpu_history=cpu, mem_history=mem,
            vms=vms))
    return states, skipped


_EPOCH = datetime.datetime(1970, 1, 1)


def _seconds(moment):
    return (moment - _EPOCH).total_seconds()


def recent(context, controls, now=None):
    """The round_budget.Recent of a round with ``controls`` (its
    Controls) at ``now``: when each VM last migrated, from the migrations
    queued within the cool-down, and each host's migrations within the
    hour."""
    now = now or timeutils.utcnow()
    horizon = max(controls.migration_cooldown, round_budget.HOUR_S)
    moved_at, host_moves = {}, {}
    for row in db_migrations.migrations_since(
            context, now - datetime.timedelta(seconds=horizon)):
        at = _seconds(row.created_at)
        age = _seconds(now) - at
        if row.status != 'failed' and age < controls.migration_cooldown:
            moved_at[row.instance_uuid] = max(
                moved_at.get(row.instance_uuid, 0.0), at)
        if age < round_budget.HOUR_S:
            for host in (row.source_host, row.dest_host):
                host_moves[host] = host_moves.get(host, 0) + 1
    return round_budget.Recent(now=_seconds(now), moved_at=moved_at,
                               host_moves=host_moves)


def _actions(plan):
    return [dict(action_type=a.action_type, reason=a.reason,
                 instance_uuid=a.instance_uuid, source_host=a.source_host,
                 dest_host=a.dest_host) for a in plan.actions]


def _count(number, what):
    return '%d %s%s' % (number, what, '' if number == 1 else 's')


def summary(plan, skipped=None):
    """One line for an operator: what a round found and planned."""
    kinds = {}
    for action in plan.actions:
        kinds[action.action_type] = kinds.get(action.action_type, 0) + 1
    overloaded = _count(len(plan.overloaded), 'overloaded host')
    if plan.overloaded:
        overloaded += ' (%s)' % ', '.join(
            '%s: %s' % (host, '+'.join(_WORDS.get(d, d) for d in dims))
            for host, dims in sorted(plan.overloaded.items()))
    parts = [overloaded,
             _count(len(plan.underloaded), 'underloaded host'),
             _count(kinds.get(plans.MIGRATE, 0), 'migration'),
             '%d power on' % kinds.get(plans.POWER_ON, 0),
             '%d power off' % kinds.get(plans.POWER_OFF, 0)]
    if plan.unplaced:
        parts.append(_count(len(plan.unplaced), 'VM') + ' not placed')
    if plan.kept:
        parts.append(_count(len(plan.kept), 'underloaded host') + ' kept')
    if plan.deferred:
        parts.append(_count(len(plan.deferred), 'overloaded host')
                     + ' deferred')
    if skipped:
        parts.append(_count(len(skipped), 'host') + ' left out')
    return '; '.join(parts)


def overrides(audit):
    """The option overrides an audit's round runs with: its parameters
    and its memory basis."""
    return dict(audit.parameters or {}, memory_basis=audit.memory_basis)


class RoundFailed(Exception):
    """A round could not be planned; its message is the reason an operator
    reads. Chained to the unexpected error behind it, if any."""


def _plan_round(context, group, overrides, memory_basis):
    """Plan a round: ``(plan, skipped)``; raises RoundFailed."""
    try:
        algorithms = consolidation.load_algorithms(group, overrides)
        hosts, skipped = collect(context, group, memory_basis)
        if not any(h.active for h in hosts):
            raise RoundFailed(_no_hosts_reason(skipped))
        return consolidation.plan_round(
            hosts, algorithms, recent(context, algorithms.controls)), skipped
    except RoundFailed:
        raise
    except exceptions.InvalidParameter as exc:
        raise RoundFailed(str(exc)) from None
    except Exception as exc:
        raise RoundFailed('planning failed: %s: %s' % (
            type(exc).__name__, exc)) from exc


def _store_plan(context, audit_uuid, plan, skipped):
    unplaced = None
    if not plan.complete or skipped:
        unplaced = {'instances': dict(plan.unplaced),
                    'hosts': {**skipped, **plan.kept, **plan.deferred}}
    line = summary(plan, skipped)
    audit = db_audits.audit_store_plan(context, audit_uuid, _actions(plan),
                                       unplaced, state=RECOMMENDED,
                                       reason=line, expected=(PLANNING,))
    LOG.info('Audit %s recommended: %s', audit_uuid, line)
    return audit


def run_audit(context, audit_uuid, group=None):
    """Plan pending audit ``audit_uuid``: planning, then recommended with
    its ordered actions and what the plan left out (``unplaced``), or
    failed with the reason. Returns the audit, or None when it was not
    pending (another round took it)."""
    group = group if group is not None else CONF.consolidation
    try:
        audit = db_audits.audit_set_state(context, audit_uuid, PLANNING,
                                          expected=(PENDING,))
    except exceptions.Conflict as exc:
        LOG.info('Not planning audit %s: %s', audit_uuid, exc)
        return None
    try:
        plan, skipped = _plan_round(context, group, overrides(audit),
                                    audit.memory_basis)
    except RoundFailed as exc:
        _log_failure(audit_uuid, exc)
        return db_audits.audit_set_state(context, audit_uuid, FAILED,
                                         reason=str(exc), expected=(PLANNING,))
    return _store_plan(context, audit_uuid, plan, skipped)


class PeriodicRounds:
    """The periodic rounds of one memagg-scheduler, and what the previous
    one came to (see the module's docstring for what is stored)."""

    def __init__(self, group=None, claim=None):
        self._group = group
        # The audit a round stores is claimed while it is planning
        # (memagg.common.coordination), so no other worker fails it.
        self._claim = claim or coordination.no_claim
        # ('failed', reason), ('empty', summary) or ('stored', None).
        self._previous = None

    def run(self, context):
        """Plan a round with the [consolidation] options; returns the audit
        stored (recommended or failed), or None when none was."""
        group = self._group if self._group is not None else CONF.consolidation
        values = dict(memory_basis=group.memory_basis,
                      auto_execute=group.auto_execute)
        try:
            plan, skipped = _plan_round(context, group, {},
                                        group.memory_basis)
        except RoundFailed as exc:
            if not self._changed(('failed', str(exc))):
                LOG.debug('Periodic consolidation round failed as the '
                          'previous one did; not stored: %s', exc)
                return None
            audit = db_audits.audit_create(context, dict(
                values, state=FAILED, reason=str(exc),
                finished_at=timeutils.utcnow()))
            _log_failure(audit.uuid, exc)
            LOG.info('Periodic rounds that fail for this same reason are not '
                     'stored until a round ends otherwise')
            return audit
        if not plan.actions:
            line = summary(plan, skipped)
            if self._changed(('empty', line)):
                LOG.info('Periodic consolidation round: nothing to do (%s); '
                         'no audit stored', line)
            else:
                LOG.debug('Periodic consolidation round: nothing to do '
                          '(%s)', line)
            return None
        self._changed(('stored', None))
        audit_uuid = uuidutils.generate_uuid()
        with self._claim('audit-%s' % audit_uuid):
            db_audits.audit_create(context, dict(values, uuid=audit_uuid,
                                                 state=PLANNING))
            return _store_plan(context, audit_uuid, plan, skipped)

    def _changed(self, outcome):
        changed = outcome != self._previous
        self._previous = outcome
        return changed


def _log_failure(audit_uuid, error):
    # A traceback only for an unexpected error; the others' reason says it
    # all.
    LOG.warning('Audit %s failed: %s', audit_uuid, error,
                exc_info=error.__cause__)


def _no_hosts_reason(skipped):
    reason = ('no compute host that can take part reported in the last '
              '%d s ([DEFAULT] service_down_time); check that memagg-compute '
              'runs on the compute nodes' % CONF.service_down_time)
    if skipped:
        reason += '; left out: ' + '; '.join(
            '%s %s' % item for item in sorted(skipped.items()))
    return reason
