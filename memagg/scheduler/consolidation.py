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

"""A consolidation round (ALGORITHMS.md §3.5): from the hosts' states to an
ordered action plan.

This module only plans: it reads HostStates, and what is known of recent
migrations as plain data (Recent), and returns a Plan, with no DB and no
RPC, so memagg-scheduler (memagg.scheduler.audits) and memagg-sim run the
very same round. Its parts: what a round is built from
(memagg.scheduler.round_options), what past migrations leave it
(round_budget), what placement sees as it plans (round_views) and what it
returns (plans).

The round, extending Neat's with memory:

1. Every active host is checked for underload (cpu and memory, or either)
   and, when not underloaded, for overload (any dimension).
2. On each overloaded host VMs are selected one at a time until the host,
   with their use taken out of its histories, is no longer overloaded and
   is back under its fill level in each dimension it was overloaded in
   (below). Each time, the selection plug-in chooses among the VMs that
   relieve the host most: those whose leaving alone brings it back under,
   else those that come closest, so that one move does what several
   cheaper ones would.
3. All selected VMs are placed in one placement call; a host that must be
   woken for them is powered on first. VMs that fit nowhere stay, with the
   placement's reason.
4. Underloaded hosts, least used first, are emptied one at a time onto the
   other active hosts (never waking one to empty another), counting the
   moves already planned. A host is emptied whole or not at all: if one of
   its VMs fits nowhere, its VMs stay and the reason is kept. An emptied
   host is powered off after its VMs have left.

Hysteresis keeps a host that a round fills, or relieves, from being found
overloaded again in the next rounds (ALGORITHMS.md §3.6). A host's fill
level in a dimension is what its overload detector accepts
(``OverloadDetector.fill_limit``: a threshold, MHOD's state threshold,
the level whose rise a regression does not extrapolate too far, for the
others a level searched with the detector itself) less
``fill_headroom_cpu`` or
``fill_headroom_mem`` (no headroom for booked memory, which does not
grow). Placement fills no host above it (its base.Room), counting a VM's
cpu as its peak over the last ``fill_window`` samples rather than its
latest, and a host's as the sum of its VMs' peaks (or its latest
utilisation, where that is more: VMs not measured yet), so that a host
filled when its VMs are quiet still takes their busy hours, VMs whose
peaks never met on a host keep room for each, and the peak of a VM that
has left is not held against the host; an overloaded host sheds VMs until
it is back under it. Every plug-in answers fill_limit, so this holds
whichever one detects overload, and placement reads one number per host,
so it is as fast as without.

A VM that migrated less than ``migration_cooldown`` seconds ago is neither
selected off an overloaded host nor moved to empty an underloaded one
(which is then kept): a VM that just moved stays put while the hosts
settle. An operator's own migration (POST /v1/migrations) is no round's
and is not held back.

Caps: a round plans at most ``max_migrations_per_round`` migrations, and a
host takes part, as source or destination, in at most
``max_migrations_per_host_hour`` within an hour, counting those of the
last hour (Recent.host_moves) and the round's own (0: no cap). Overloaded
hosts are relieved first, the most loaded first. A host being emptied is
not held back by its own hourly cap: it is about to power off.

An overloaded host whose relief the cool-down or a cap holds back is
listed in ``Plan.deferred``.
"""
import dataclasses
import json
import math

from oslo_config import cfg

from memagg.common import exceptions
from memagg.drivers.consolidation import base
from memagg.drivers.consolidation import overload
from memagg.drivers.consolidation import underload
from memagg.scheduler import plans
from memagg.scheduler import round_budget
from memagg.scheduler import round_options
from memagg.scheduler import round_views

_DIMENSION_WORDS = {'cpu': 'cpu', 'mem': 'memory'}


def _params(name, value):
    """A plug-in's parameters: a JSON object, given as text (config) or
    already decoded (an audit's request)."""
    field = '[%s] %s_params' % (round_options.GROUP, name)
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise exceptions.InvalidParameter(
                field=field, reason='not valid JSON (%s); write a JSON '
                                    'object such as {"threshold": 0.9}' % exc)
    if not isinstance(value, dict):
        raise exceptions.InvalidParameter(
            field=field, reason='must be a JSON object, got %r' % (value,))
    return dict(value)


def _control(name, value):
    """Control option ``name``'s value, given as a number (configuration,
    an audit) or as text (memagg-sim's command line), checked against the
    option's type and bounds."""
    opt = round_options.CONTROL_OPTS[name]
    field = '[%s] %s' % (round_options.GROUP, name)
    integral = isinstance(opt, cfg.IntOpt)
    number = value
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            number = None
    if (isinstance(number, bool) or not isinstance(number, (int, float))
            or not math.isfinite(number)
            or (integral and number != int(number))):
        raise exceptions.InvalidParameter(
            field=field, reason='must be %s, got %r' % (
                'an integer' if integral else 'a number', value))
    low, high = opt.type.min, opt.type.max
    if number < low or (high is not None and number > high):
        raise exceptions.InvalidParameter(
            field=field, reason='must be %s, got %r' % (
                'at least %s' % low if high is None
                else 'between %s and %s' % (low, high), value))
    return int(number) if integral else float(number)


def load_algorithms(group, overrides=None):
    """The Algorithms named by ``group`` (``CONF.consolidation`` or any
    object with its option attributes), with ``overrides`` (option name ->
    value, e.g. an audit's parameters) applied over it.

    Raises InvalidParameter naming the option, or ``<family>.<plugin>.<key>``
    for a bad plug-in parameter; an unknown plug-in lists the installed
    ones.
    """
    overrides = dict(overrides or {})
    unknown = sorted(set(overrides) - set(round_options.OPTIONS))
    if unknown:
        raise exceptions.InvalidParameter(
            field=unknown[0], reason='not a consolidation option; use one of '
                                     '%s' % ', '.join(round_options.OPTIONS))

    def value(name):
        return overrides[name] if name in overrides else getattr(group, name)

    require = value('underload_require')
    if require not in ('both', 'either'):
        raise exceptions.InvalidParameter(
            field='[%s] underload_require' % round_options.GROUP,
            reason="must be 'both' or 'either', got %r" % (require,))
    basis = value('memory_basis')
    if basis not in ('wss', 'booked'):
        raise exceptions.InvalidParameter(
            field='[%s] memory_basis' % round_options.GROUP,
            reason="must be 'wss' or 'booked', got %r" % (basis,))
    controls = round_options.Controls(
        **{name: _control(name, value(name))
           for name in round_options.CONTROLS})

    built = {}
    for name, (family, dimension) in round_options.FAMILIES.items():
        params = _params(name, value(name + '_params'))
        if family == 'placement':
            _apply_basis(params, basis)
        built[name] = base.load(family, value(name), params,
                                dimension=dimension,
                                option='[%s] %s' % (round_options.GROUP,
                                                    name))
    return round_options.Algorithms(underload_require=require,
                                    controls=controls, **built)


def _apply_basis(params, basis):
    """The placement packs by ``memory_basis``; naming it in the placement
    parameters too is allowed only when they agree."""
    given = params.setdefault('memory_basis', basis)
    if given != basis:
        raise exceptions.InvalidParameter(
            field='[%s] placement_params.memory_basis' % round_options.GROUP,
            reason='%r contradicts memory_basis %r; set memory_basis only'
                   % (given, basis))


def _words(dims):
    return '+'.join(_DIMENSION_WORDS[d] for d in dims)


def detect(cpu_history, mem_history, algorithms):
    """A round's detection (step 1) of a host with these histories: the
    dimensions that make it underloaded and, when it is not underloaded,
    those it is overloaded in (each a list, empty for none)."""
    low = underload.host_underloaded(
        algorithms.underload_cpu, algorithms.underload_mem, cpu_history,
        mem_history, algorithms.underload_require)
    if low:
        return low, []
    return [], _overload(cpu_history, mem_history, algorithms)


def _overload(cpu_history, mem_history, algorithms):
    return overload.host_overloaded(algorithms.overload_cpu,
                                    algorithms.overload_mem, cpu_history,
                                    mem_history)


def _select(host, dims, algorithms, recent, most):
    """Up to ``most`` VMs to take off ``host``, overloaded in ``dims``:
    selected one at a time, of those not cooling down, until its
    histories, without them, are no longer overloaded and its latest use
    in ``dims`` is back under its fill level. Returns them and whether
    that was reached.

    A leaving VM's cpu samples are subtracted from the host's, aligned on
    the newest; its memory in the round's basis (WSS max-average, or
    booked) is subtracted from every memory sample, as that is all that is
    known of its past memory.
    """
    # The host as it would be without the VMs chosen so far.
    probe = dataclasses.replace(
        host, cpu_history=list(host.cpu_history),
        mem_history=list(host.mem_history),
        vms=[vm for vm in host.vms
             if not round_budget.cooling(vm, algorithms, recent)])
    cpu = probe.cpu_history
    chosen = []
    while probe.vms and len(chosen) < most:
        vm = algorithms.vm_selection.select(
            probe, _most_relieving(probe, dims, algorithms))
        probe.vms = [other for other in probe.vms if other is not vm]
        chosen.append(vm)
        if host.cpu_total > 0:
            for back, used in enumerate(reversed(vm.cpu_history[-len(cpu):]
                                                 if cpu else []), 1):
                cpu[-back] = max(0.0, cpu[-back] - used / host.cpu_total)
        if host.mem_usable_mb > 0:
            share = (round_options.vm_memory(vm, algorithms)
                     / host.mem_usable_mb)
            probe.mem_history = [max(0.0, m - share)
                                 for m in probe.mem_history]
        if _relieved(probe, dims, algorithms):
            return chosen, True
    return chosen, False


def _excess(probe, dims, algorithms):
    """How much ``probe`` is over its fill levels in ``dims``: (cpu, MiB),
    0 where it is not."""
    cpu_level, mem_level = round_options.fill_levels(probe, algorithms)
    cpu = mem = 0.0
    if 'cpu' in dims and probe.cpu_history:
        cpu = (probe.cpu_history[-1] - cpu_level) * probe.cpu_total
    if 'mem' in dims and probe.mem_history:
        mem = (probe.mem_history[-1] - mem_level) * probe.mem_usable_mb
    return max(cpu, 0.0), max(mem, 0.0)


def _most_relieving(probe, dims, algorithms):
    """The VMs of ``probe`` whose leaving relieves it most: those that
    alone bring it back under its fill levels in ``dims``, else those that
    take the largest share of its excess (in the dimension where their
    share is the smaller)."""
    need_cpu, need_mem = _excess(probe, dims, algorithms)

    def relief(vm):
        shares = [1.0]
        if need_cpu:
            shares.append((vm.cpu_history[-1] if vm.cpu_history else 0.0)
                          / need_cpu)
        if need_mem:
            shares.append(round_options.vm_memory(vm, algorithms) / need_mem)
        return min(shares)

    reliefs = [relief(vm) for vm in probe.vms]
    best = max(reliefs)
    return [vm for vm, share in zip(probe.vms, reliefs) if share >= best]


def _relieved(probe, dims, algorithms):
    """Whether ``probe`` is no longer overloaded and back under its fill
    levels in ``dims``."""
    return (not _overload(probe.cpu_history, probe.mem_history, algorithms)
            and _excess(probe, dims, algorithms) == (0.0, 0.0))


def plan_round(hosts, algorithms, recent=None, peak=round_views.peak,
               detected=None):
    """The Plan of one consolidation round over ``hosts`` (HostStates)
    with ``algorithms`` (an Algorithms), knowing ``recent`` (a Recent;
    None: no migration lately).

    ``detected`` maps an active host's name to what detect() found of it,
    when the caller has already detected (memagg-sim does, to know which
    hosts' VMs the round needs); an active host left out is neither
    under- nor overloaded. None: the round detects.

    ``peak(history, window)`` is the largest of the last ``window``
    samples of a cpu history, 0 if it has none: round_views.peak computes
    it; a caller that keeps its hosts' and VMs' peaks as it goes
    (memagg-sim) passes one that answers from them, and must answer the
    same.
    """
    recent = recent if recent is not None else round_budget.Recent()
    plan = plans.Plan()
    under = {}
    nothing = ([], [])
    for host in hosts:
        if not host.active:
            continue
        if detected is None:
            low, high = detect(host.cpu_history, host.mem_history,
                               algorithms)
        else:
            low, high = detected.get(host.name, nothing)
        if low:
            under[host.name] = low
            plan.underloaded.append(host.name)
        elif high:
            plan.overloaded[host.name] = high
    if not under and not plan.overloaded:
        return plan

    budget = round_budget.Budget(algorithms.controls, recent)
    views = round_views.Views(hosts, algorithms, budget, peak)
    by_name = {host.name: host for host in hosts}
    woken, relief, evacuation, power_off = [], [], [], []

    selected, source, reason = [], {}, {}
    # The most loaded first, should the round's cap stop the relief.
    for name in sorted(plan.overloaded, key=lambda name: -max(
            by_name[name].cpu_history[-1:] + by_name[name].mem_history[-1:])):
        dims = plan.overloaded[name]
        # A host shedding VMs takes none: it would be overloaded again.
        views.rooms[name].moves = 0
        most = min(budget.round - len(selected), budget.host(name))
        chosen, relieved = _select(by_name[name], dims, algorithms, recent,
                                   most)
        if not relieved:
            plan.deferred[name] = _held_back(
                by_name[name], algorithms, recent,
                capped=len(chosen) >= most,
                by_round=budget.round - len(selected) <= budget.host(name))
        for vm in chosen:
            selected.append(vm)
            source[vm.uuid] = name
            reason[vm.uuid] = 'overload:' + _words(dims)
    if selected:
        result = views.place(selected)
        plan.unplaced.update(result.unplaced)
        first_reason = {}
        for vm in selected:
            dest = result.placements.get(vm.uuid)
            if dest is None:
                continue
            first_reason.setdefault(dest, reason[vm.uuid])
            views.move(vm, source[vm.uuid], dest, budget)
            relief.append(plans.Action(plans.MIGRATE, reason[vm.uuid],
                                       vm.uuid, source[vm.uuid], dest))
        woken = [plans.Action(plans.POWER_ON, first_reason[name],
                              source_host=name)
                 for name in result.woken]

    emptied = set()
    order = sorted(under, key=lambda name: (
        by_name[name].cpu_history[-1:], by_name[name].mem_history[-1:],
        name))
    for name in order:
        if name in views.received:
            # Overloaded hosts' VMs went there: it is no longer idle.
            continue
        why = 'underload:' + _words(under[name])
        vms = list(views.hosts[name].vms)
        if not any(view.active and view.name != name
                   and view.name not in emptied
                   for view in views.hosts.values()):
            plan.kept[name] = ('it is the last active host; one stays on '
                               'to take VMs')
            continue
        if vms:
            blocked = (_cooling_reason(vms, algorithms, recent)
                       or _over_round_cap(vms, algorithms, budget)
                       or views.why_not(name, vms))
            if blocked:
                plan.kept[name] = blocked
                continue
            result = views.place(vms, views.targets(name, vms))
            if result.unplaced:
                uuid = sorted(result.unplaced)[0]
                plan.kept[name] = 'VM %s fits on no other active host: %s' % (
                    uuid, result.unplaced[uuid])
                continue
            for vm in vms:
                dest = result.placements[vm.uuid]
                views.move(vm, name, dest, budget)
                evacuation.append(plans.Action(plans.MIGRATE, why, vm.uuid,
                                               name, dest))
        emptied.add(name)
        views.leave(name)
        power_off.append(plans.Action(plans.POWER_OFF, why, source_host=name))

    plan.actions = woken + relief + evacuation + power_off
    return plan


def _held_back(host, algorithms, recent, capped, by_round):
    """Why overloaded ``host`` is left overloaded by the VMs it sheds:
    ``capped`` when a cap stopped the selection, the round's (``by_round``)
    or the host's."""
    controls = algorithms.controls
    if capped and by_round:
        return ('the round planned its max_migrations_per_round (%d)'
                % controls.max_migrations_per_round)
    if capped:
        return ('it took part in its max_migrations_per_host_hour (%d) '
                'within the hour' % controls.max_migrations_per_host_hour)
    cooling = sum(1 for vm in host.vms
                  if round_budget.cooling(vm, algorithms, recent))
    if cooling:
        return ('%d of its VMs migrated less than migration_cooldown (%d s) '
                'ago; the others do not relieve it'
                % (cooling, controls.migration_cooldown))
    return 'it is still overloaded without any of its VMs'


def _cooling_reason(vms, algorithms, recent):
    """Why ``vms`` (an underloaded host's) may not move now, or None."""
    for vm in vms:
        left = round_budget.cooling(vm, algorithms, recent)
        if left:
            return ('VM %s migrated less than migration_cooldown (%d s) '
                    'ago: %d s to go' % (
                        vm.uuid, algorithms.controls.migration_cooldown,
                        math.ceil(left)))
    return None


def _over_round_cap(vms, algorithms, budget):
    """Why the round's cap keeps an underloaded host with ``vms`` from
    being emptied, or None."""
    if len(vms) <= budget.round:
        return None
    return ('emptying it takes %d migrations; the round may plan %d more '
            '(max_migrations_per_round %d)' % (
                len(vms), budget.round,
                algorithms.controls.max_migrations_per_round))
