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

This module only plans: it reads HostStates and returns a Plan, with no DB
and no RPC, so memagg-scheduler (memagg.scheduler.audits) and memagg-sim
run the very same round.

The round, extending Neat's with memory:

1. Every active host is checked for underload (cpu and memory, or either)
   and, when not underloaded, for overload (any dimension).
2. On each overloaded host VMs are selected one at a time until the host,
   with their use taken out of its histories, is no longer overloaded.
3. All selected VMs are placed in one placement call; a host that must be
   woken for them is powered on first. VMs that fit nowhere stay, with the
   placement's reason.
4. Underloaded hosts, least used first, are emptied one at a time onto the
   other active hosts (never waking one to empty another), counting the
   moves already planned. A host is emptied whole or not at all: if one of
   its VMs fits nowhere, its VMs stay and the reason is kept. An emptied
   host is powered off after its VMs have left.
"""
import dataclasses
import json

from memagg.common import exceptions
from memagg.drivers.consolidation import base
from memagg.drivers.consolidation import overload
from memagg.drivers.consolidation import underload

MIGRATE = 'migrate'
POWER_ON = 'power_on'
POWER_OFF = 'power_off'

GROUP = 'consolidation'

#: Option name of each constructed plug-in -> (family, dimension judged).
FAMILIES = {
    'underload_cpu': ('underload', 'cpu'),
    'underload_mem': ('underload', 'mem'),
    'overload_cpu': ('overload', 'cpu'),
    'overload_mem': ('overload', 'mem'),
    'vm_selection': ('vm_selection', 'cpu'),
    'placement': ('placement', 'cpu'),
}

#: Every option a round's algorithms are built from; an audit may override
#: any of them.
OPTIONS = tuple(sorted(
    [name for name in FAMILIES] + [name + '_params' for name in FAMILIES]
    + ['underload_require', 'memory_basis']))

_DIMENSION_WORDS = {'cpu': 'cpu', 'mem': 'memory'}


@dataclasses.dataclass
class Action:
    """One step of a plan.

    A MIGRATE moves ``instance_uuid`` from ``source_host`` to
    ``dest_host``; POWER_ON and POWER_OFF act on ``source_host``.
    ``reason`` is ``overload:<dims>`` or ``underload:<dims>``, dims being
    ``cpu``, ``memory`` or ``cpu+memory``.
    """

    action_type: str
    reason: str
    instance_uuid: str = None
    source_host: str = None
    dest_host: str = None


@dataclasses.dataclass
class Plan:
    """A round's result: the ordered actions (power on, migrations of
    overloaded hosts' VMs, migrations emptying underloaded hosts, power
    off), what was detected, and why some VMs or hosts were left as they
    are."""

    actions: list = dataclasses.field(default_factory=list)
    underloaded: list = dataclasses.field(default_factory=list)
    overloaded: dict = dataclasses.field(default_factory=dict)
    unplaced: dict = dataclasses.field(default_factory=dict)
    kept: dict = dataclasses.field(default_factory=dict)

    @property
    def complete(self):
        """True when every selected VM was placed and every underloaded
        host emptied."""
        return not self.unplaced and not self.kept


@dataclasses.dataclass
class Algorithms:
    """The constructed plug-ins of a round."""

    underload_cpu: base.UnderloadDetector
    underload_mem: base.UnderloadDetector
    overload_cpu: base.OverloadDetector
    overload_mem: base.OverloadDetector
    vm_selection: base.VmSelector
    placement: base.Placement
    underload_require: str = 'both'

    @property
    def memory_basis(self):
        """What a VM's memory counts as: 'wss' (its WSS max-average) or
        'booked'; hosts' memory histories are expected in the same terms."""
        return self.placement.params.get('memory_basis', 'wss')


def _params(name, value):
    """A plug-in's parameters: a JSON object, given as text (config) or
    already decoded (an audit's request)."""
    field = '[%s] %s_params' % (GROUP, name)
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


def load_algorithms(group, overrides=None):
    """The Algorithms named by ``group`` (``CONF.consolidation`` or any
    object with its option attributes), with ``overrides`` (option name ->
    value, e.g. an audit's parameters) applied over it.

    Raises InvalidParameter naming the option, or ``<family>.<plugin>.<key>``
    for a bad plug-in parameter; an unknown plug-in lists the installed
    ones.
    """
    overrides = dict(overrides or {})
    unknown = sorted(set(overrides) - set(OPTIONS))
    if unknown:
        raise exceptions.InvalidParameter(
            field=unknown[0], reason='not a consolidation option; use one of '
                                     '%s' % ', '.join(OPTIONS))

    def value(name):
        return overrides[name] if name in overrides else getattr(group, name)

    require = value('underload_require')
    if require not in ('both', 'either'):
        raise exceptions.InvalidParameter(
            field='[%s] underload_require' % GROUP,
            reason="must be 'both' or 'either', got %r" % (require,))
    basis = value('memory_basis')
    if basis not in ('wss', 'booked'):
        raise exceptions.InvalidParameter(
            field='[%s] memory_basis' % GROUP,
            reason="must be 'wss' or 'booked', got %r" % (basis,))

    built = {}
    for name, (family, dimension) in FAMILIES.items():
        params = _params(name, value(name + '_params'))
        if family == 'placement':
            _apply_basis(params, basis)
        built[name] = base.load(family, value(name), params,
                                dimension=dimension,
                                option='[%s] %s' % (GROUP, name))
    return Algorithms(underload_require=require, **built)


def _apply_basis(params, basis):
    """The placement packs by ``memory_basis``; naming it in the placement
    parameters too is allowed only when they agree."""
    given = params.setdefault('memory_basis', basis)
    if given != basis:
        raise exceptions.InvalidParameter(
            field='[%s] placement_params.memory_basis' % GROUP,
            reason='%r contradicts memory_basis %r; set memory_basis only'
                   % (given, basis))


def _words(dims):
    return '+'.join(_DIMENSION_WORDS[d] for d in dims)


def _underload(host, algorithms):
    return underload.host_underloaded(
        algorithms.underload_cpu, algorithms.underload_mem, host,
        algorithms.underload_require)


def _overload(host, algorithms):
    return overload.host_overloaded(algorithms.overload_cpu,
                                    algorithms.overload_mem, host)


def _select(host, algorithms):
    """VMs to take off overloaded ``host``: selected one at a time until
    its histories, without them, are no longer overloaded.

    A leaving VM's cpu samples are subtracted from the host's, aligned on
    the newest; its memory in the round's basis (WSS max-average, or
    booked) is subtracted from every memory sample, as that is all that is
    known of its past memory.
    """
    booked = algorithms.memory_basis == 'booked'
    # The host as it would be without the VMs chosen so far.
    probe = dataclasses.replace(host, cpu_history=list(host.cpu_history),
                                mem_history=list(host.mem_history),
                                vms=list(host.vms))
    cpu = probe.cpu_history
    chosen = []
    while probe.vms:
        vm = algorithms.vm_selection.select(probe, probe.vms)
        probe.vms = [other for other in probe.vms if other is not vm]
        chosen.append(vm)
        if host.cpu_total > 0:
            for back, used in enumerate(reversed(vm.cpu_history[-len(cpu):]
                                                 if cpu else []), 1):
                cpu[-back] = max(0.0, cpu[-back] - used / host.cpu_total)
        if host.mem_usable_mb > 0:
            share = ((vm.booked_mb if booked else vm.wss_maxavg_mb)
                     / host.mem_usable_mb)
            probe.mem_history = [max(0.0, m - share)
                                 for m in probe.mem_history]
        if not _overload(probe, algorithms):
            break
    return chosen


class _Views:
    """What placement sees of each host as the round plans moves: its
    latest cpu utilisation and its VMs, copied so the callers' HostStates
    are left as they were."""

    def __init__(self, hosts):
        self.hosts = {
            host.name: dataclasses.replace(
                host, cpu_history=list(host.cpu_history[-1:]),
                mem_history=list(host.mem_history[-1:]),
                vms=list(host.vms))
            for host in hosts}
        self.received = set()

    def move(self, vm, source, dest):
        src, dst = self.hosts[source], self.hosts[dest]
        src.vms = [other for other in src.vms if other is not vm]
        used = vm.cpu_history[-1] if vm.cpu_history else 0.0
        if src.cpu_history and src.cpu_total > 0:
            src.cpu_history[-1] = max(0.0, src.cpu_history[-1]
                                      - used / src.cpu_total)
        if not dst.active:
            # A woken host starts with nothing running.
            dst.active = True
            dst.cpu_history = [0.0]
            dst.vms = []
        if dst.cpu_history and dst.cpu_total > 0:
            dst.cpu_history[-1] += used / dst.cpu_total
        dst.vms.append(vm)
        self.received.add(dest)


def plan_round(hosts, algorithms):
    """The Plan of one consolidation round over ``hosts`` (HostStates)
    with ``algorithms`` (an Algorithms)."""
    plan = Plan()
    under = {}
    for host in hosts:
        if not host.active:
            continue
        dims = _underload(host, algorithms)
        if dims:
            under[host.name] = dims
            plan.underloaded.append(host.name)
            continue
        dims = _overload(host, algorithms)
        if dims:
            plan.overloaded[host.name] = dims
    if not under and not plan.overloaded:
        return plan

    views = _Views(hosts)
    by_name = {host.name: host for host in hosts}
    woken, relief, evacuation, power_off = [], [], [], []

    selected, source, reason = [], {}, {}
    for name, dims in plan.overloaded.items():
        for vm in _select(by_name[name], algorithms):
            selected.append(vm)
            source[vm.uuid] = name
            reason[vm.uuid] = 'overload:' + _words(dims)
    if selected:
        result = algorithms.placement.place(list(views.hosts.values()),
                                            selected)
        plan.unplaced.update(result.unplaced)
        first_reason = {}
        for vm in selected:
            dest = result.placements.get(vm.uuid)
            if dest is None:
                continue
            first_reason.setdefault(dest, reason[vm.uuid])
            views.move(vm, source[vm.uuid], dest)
            relief.append(Action(MIGRATE, reason[vm.uuid], vm.uuid,
                                 source[vm.uuid], dest))
        woken = [Action(POWER_ON, first_reason[name], source_host=name)
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
            targets = [view for view in views.hosts.values()
                       if view.active and view.name != name
                       and view.name not in emptied]
            result = algorithms.placement.place(targets, vms)
            if result.unplaced:
                uuid = sorted(result.unplaced)[0]
                plan.kept[name] = 'VM %s fits on no other active host: %s' % (
                    uuid, result.unplaced[uuid])
                continue
            for vm in vms:
                dest = result.placements[vm.uuid]
                views.move(vm, name, dest)
                evacuation.append(Action(MIGRATE, why, vm.uuid, name, dest))
        emptied.add(name)
        power_off.append(Action(POWER_OFF, why, source_host=name))

    plan.actions = woken + relief + evacuation + power_off
    return plan
