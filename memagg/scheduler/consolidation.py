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
very same round.

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
grow). Placement fills no host above it (its base.Room), counting a
host's cpu and a VM's as their peak over the last ``fill_window``
samples rather than their latest, so that a host filled when its VMs are
quiet still takes their busy hours; an overloaded host sheds VMs until it
is back under it. Every plug-in answers fill_limit, so this holds
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
from memagg.conf import consolidation as conf_consolidation
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

#: The options of Controls.
CONTROLS = ('fill_headroom_cpu', 'fill_headroom_mem', 'fill_window',
            'migration_cooldown', 'max_migrations_per_round',
            'max_migrations_per_host_hour')

#: The window of Recent.host_moves and max_migrations_per_host_hour, s.
HOUR_S = 3600

#: Every option a round's algorithms are built from; an audit may override
#: any of them.
OPTIONS = tuple(sorted(
    [name for name in FAMILIES] + [name + '_params' for name in FAMILIES]
    + ['underload_require', 'memory_basis'] + list(CONTROLS)))

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
    are: ``unplaced`` (VM -> why no host took it), ``kept`` (underloaded
    host -> why it was not emptied), ``deferred`` (overloaded host -> why
    it was left overloaded)."""

    actions: list = dataclasses.field(default_factory=list)
    underloaded: list = dataclasses.field(default_factory=list)
    overloaded: dict = dataclasses.field(default_factory=dict)
    unplaced: dict = dataclasses.field(default_factory=dict)
    kept: dict = dataclasses.field(default_factory=dict)
    deferred: dict = dataclasses.field(default_factory=dict)

    @property
    def complete(self):
        """True when every overloaded host was relieved, every selected VM
        placed and every underloaded host emptied."""
        return not self.unplaced and not self.kept and not self.deferred


@dataclasses.dataclass
class Controls:
    """What keeps a round from migrating in storms (ALGORITHMS.md §3.6):
    the [consolidation] options of the same names."""

    fill_headroom_cpu: float
    fill_headroom_mem: float
    fill_window: int
    migration_cooldown: int
    max_migrations_per_round: int
    max_migrations_per_host_hour: int


@dataclasses.dataclass
class Recent:
    """What a round knows of past migrations, as plain data.

    ``now`` and the values of ``moved_at`` are seconds on one clock (any
    origin): ``moved_at`` maps a VM's uuid to when it last migrated (a VM
    left out has not lately). ``host_moves`` maps a host's name to the
    migrations it took part in, as source or destination, in the HOUR_S
    before ``now`` (a host left out: none).
    """

    now: float = 0.0
    moved_at: dict = dataclasses.field(default_factory=dict)
    host_moves: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class Algorithms:
    """The constructed plug-ins of a round and its Controls."""

    underload_cpu: base.UnderloadDetector
    underload_mem: base.UnderloadDetector
    overload_cpu: base.OverloadDetector
    overload_mem: base.OverloadDetector
    vm_selection: base.VmSelector
    placement: base.Placement
    controls: Controls
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


#: The oslo.config option of each of CONTROLS: its type and bounds.
CONTROL_OPTS = {opt.dest: opt for opt in conf_consolidation.opts
                if opt.dest in CONTROLS}


def _control(name, value):
    """Control option ``name``'s value, given as a number (configuration,
    an audit) or as text (memagg-sim's command line), checked against the
    option's type and bounds."""
    opt = CONTROL_OPTS[name]
    field = '[%s] %s' % (GROUP, name)
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
    controls = Controls(**{name: _control(name, value(name))
                           for name in CONTROLS})

    built = {}
    for name, (family, dimension) in FAMILIES.items():
        params = _params(name, value(name + '_params'))
        if family == 'placement':
            _apply_basis(params, basis)
        built[name] = base.load(family, value(name), params,
                                dimension=dimension,
                                option='[%s] %s' % (GROUP, name))
    return Algorithms(underload_require=require, controls=controls,
                      **built)


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


def _fill_levels(host, algorithms):
    """The (cpu, mem) utilisation ``host`` may be filled to: what its
    overload detectors accept less the headroom (none for booked memory,
    which does not grow)."""
    controls = algorithms.controls
    mem_headroom = (controls.fill_headroom_mem
                    if algorithms.memory_basis == 'wss' else 0.0)
    return (algorithms.overload_cpu.fill_limit(host.cpu_history)
            - controls.fill_headroom_cpu,
            algorithms.overload_mem.fill_limit(host.mem_history)
            - mem_headroom)


def _vm_memory(vm, algorithms):
    """``vm``'s memory in the round's basis, MiB."""
    if algorithms.memory_basis == 'booked':
        return vm.booked_mb
    return vm.wss_maxavg_mb


def _cooling(vm, algorithms, recent):
    """Seconds left of ``vm``'s cool-down (0: none)."""
    moved = recent.moved_at.get(vm.uuid)
    cooldown = algorithms.controls.migration_cooldown
    if moved is None or not cooldown:
        return 0
    return max(0.0, moved + cooldown - recent.now)


class _Budget:
    """The migrations the caps leave: to the round, and to each host."""

    def __init__(self, controls, recent):
        self.round = controls.max_migrations_per_round or math.inf
        self.per_host = controls.max_migrations_per_host_hour or math.inf
        self.used = dict(recent.host_moves)

    def host(self, name):
        """Migrations host ``name`` may still take part in this hour."""
        return max(0, self.per_host - self.used.get(name, 0))

    def take(self, source, dest):
        self.round -= 1
        for name in (source, dest):
            self.used[name] = self.used.get(name, 0) + 1


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
        vms=[vm for vm in host.vms if not _cooling(vm, algorithms, recent)])
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
            share = _vm_memory(vm, algorithms) / host.mem_usable_mb
            probe.mem_history = [max(0.0, m - share)
                                 for m in probe.mem_history]
        if _relieved(probe, dims, algorithms):
            return chosen, True
    return chosen, False


def _excess(probe, dims, algorithms):
    """How much ``probe`` is over its fill levels in ``dims``: (cpu, MiB),
    0 where it is not."""
    cpu_level, mem_level = _fill_levels(probe, algorithms)
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
            shares.append(_vm_memory(vm, algorithms) / need_mem)
        return min(shares)

    reliefs = [relief(vm) for vm in probe.vms]
    best = max(reliefs)
    return [vm for vm, share in zip(probe.vms, reliefs) if share >= best]


def _relieved(probe, dims, algorithms):
    """Whether ``probe`` is no longer overloaded and back under its fill
    levels in ``dims``."""
    return (not _overload(probe, algorithms)
            and _excess(probe, dims, algorithms) == (0.0, 0.0))


def _peak(history, window):
    """The largest of the last ``window`` samples of ``history`` (0 if
    none)."""
    # A slice: the simulator's VM histories make it a list at once.
    tail = history[-window:]
    return max(tail) if tail else 0.0


class _Views:
    """What placement sees of each host as the round plans moves: its cpu
    utilisation (the peak of its last ``fill_window`` samples), its VMs
    (copied, so the callers' HostStates are left as they were) and how far
    it may be filled (a base.Room); and of each VM placed, its cpu as the
    peak of its last ``fill_window`` samples.

    Before placement is asked to empty a host, why_not checks that the
    others have room for its VMs at all (_Spare): most underloaded hosts a
    round keeps are kept round after round, and that check is far cheaper
    than placement's.
    """

    def __init__(self, hosts, algorithms, budget):
        self.window = algorithms.controls.fill_window
        self.algorithms = algorithms
        self.hosts = {}
        self.rooms = {}
        self.weighed = {}
        for host in hosts:
            self.hosts[host.name] = base.HostState(
                host.name, host.cpu_total, host.mem_usable_mb,
                [_peak(host.cpu_history, self.window)]
                if host.cpu_history else [],
                list(host.mem_history[-1:]), list(host.vms), host.active)
            cpu, mem = _fill_levels(host, algorithms)
            moves = budget.host(host.name)
            self.rooms[host.name] = base.Room(
                cpu=cpu, mem=mem,
                moves=None if moves == math.inf else moves)
        self.received = set()
        self._spare = None

    def memory(self, vm):
        """``vm``'s memory in the round's basis, MiB."""
        return _vm_memory(vm, self.algorithms)

    def demand(self, vm):
        """``vm`` as placement weighs it: its cpu as its peak."""
        if self.window == 1 or not vm.cpu_history:
            return vm
        weighed = self.weighed.get(vm.uuid)
        if weighed is None:
            weighed = self.weighed[vm.uuid] = base.VmState(
                vm.uuid, [_peak(vm.cpu_history, self.window)],
                vm.wss_maxavg_mb, vm.booked_mb, vm.remote_mb, vm.dirty_mb_s)
        return weighed

    def need_cpu(self, vm):
        """The cpu ``vm`` takes at least wherever it goes: its peak (with
        a window of 1 placement averages the latest samples, and no more
        than 0 is sure)."""
        if self.window == 1 or not vm.cpu_history:
            return 0.0
        return self.demand(vm).cpu_history[-1]

    def place(self, vms, targets=None):
        """Placement's PlacementResult for ``vms`` over ``targets`` (views;
        default: every host), within the rooms."""
        if targets is None:
            targets = list(self.hosts.values())
        return self.algorithms.placement.place(
            targets, [self.demand(vm) for vm in vms], self.rooms)

    def why_not(self, name, vms):
        """Why the other active hosts surely cannot take ``vms`` of host
        ``name``, or None when placement must be asked."""
        if self._spare is None:
            self._spare = _Spare(self)
        return self._spare.why_not(name, vms)

    def targets(self, name, vms):
        """The hosts placement may put ``vms`` of host ``name`` on: the
        other active hosts, not emptied, with room under their fill levels
        for the smallest of them (placement would put none of them on the
        others: leaving them out spares its work, not its choices).
        Called after why_not."""
        cpu = min(self.need_cpu(vm) for vm in vms)
        mem = min(self.memory(vm) for vm in vms)
        return [self.hosts[other]
                for other, (left_cpu, left_mem) in self._spare.left.items()
                if other != name and self.rooms[other].moves != 0
                and left_cpu >= cpu and left_mem >= mem]

    def leave(self, name):
        """Host ``name`` is emptied: it takes no VMs any more."""
        if self._spare is not None:
            self._spare.drop(name)

    def move(self, vm, source, dest, budget):
        src, dst = self.hosts[source], self.hosts[dest]
        src.vms = [other for other in src.vms if other is not vm]
        used = self.demand(vm).cpu_history[-1] if vm.cpu_history else 0.0
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
        budget.take(source, dest)
        for name in (source, dest):
            room = self.rooms[name]
            if room.moves is not None:
                room.moves = max(0, room.moves - 1)
        if self._spare is not None:
            self._spare.took(dest, self.need_cpu(vm), self.memory(vm))


class _Spare:
    """What each active host of a round has left under its fill levels,
    (cpu cores, MiB), and the VMs it may still receive: enough to tell,
    without asking placement, that a host's VMs cannot all move.

    The checks are necessary conditions of placement's success (it fills
    no host beyond its room, and counts a VM's cpu at no less than its
    peak, its memory as the same): they never keep a host placement could
    empty.
    """

    def __init__(self, views):
        self.views = views
        self.left = {}
        for name, view in views.hosts.items():
            if not view.active:
                continue
            room = views.rooms[name]
            used = view.cpu_history[-1] if view.cpu_history else 0.0
            self.left[name] = (
                max(0.0, room.cpu - used) * view.cpu_total,
                max(0.0, room.mem * view.mem_usable_mb
                    - sum(views.memory(vm) for vm in view.vms)))
        self._index = None

    def took(self, name, cpu, mem):
        if name in self.left:
            left_cpu, left_mem = self.left[name]
            self.left[name] = (max(0.0, left_cpu - cpu),
                               max(0.0, left_mem - mem))
            self._index = None

    def drop(self, name):
        self.left.pop(name, None)
        self._index = None

    def _takers(self):
        """The hosts that may receive VMs, by decreasing cpu left, and
        their sums: (takers, cpu, memory, slots, unlimited)."""
        if self._index is None:
            rooms = self.views.rooms
            takers = sorted(
                ((cpu, mem, name) for name, (cpu, mem) in self.left.items()
                 if rooms[name].moves != 0), reverse=True)
            slots = [rooms[name].moves for _, _, name in takers]
            self._index = (
                takers, sum(cpu for cpu, _, _ in takers),
                sum(mem for _, mem, _ in takers),
                sum(moves for moves in slots if moves is not None),
                sum(1 for moves in slots if moves is None))
        return self._index

    def why_not(self, name, vms):
        takers, cpu_left, mem_left, slots, unlimited = self._takers()
        own = self.left.get(name)
        moves = self.views.rooms[name].moves if own else None
        if own and self.views.rooms[name].moves != 0:
            cpu_left -= own[0]
            mem_left -= own[1]
            if moves is None:
                unlimited -= 1
            else:
                slots -= moves
        if not unlimited and slots < len(vms):
            return ('emptying it takes %d migrations; the other active '
                    'hosts may take part in %d more this hour '
                    '(max_migrations_per_host_hour %d)' % (
                        len(vms), slots, self.views.algorithms.controls
                        .max_migrations_per_host_hour))
        # Each VM must fit somewhere on its own, and all of them in what
        # the others have left. A VM's cpu is a peak to compute: the
        # largest VM first, then the sum of memory, then the others, the
        # busiest by their latest samples first (the likeliest to fit
        # nowhere).
        memory = [self.views.memory(vm) for vm in vms]
        largest = max(range(len(vms)), key=memory.__getitem__)
        order = [largest] + sorted(
            (index for index in range(len(vms)) if index != largest),
            key=lambda index: -(vms[index].cpu_history[-1]
                                if vms[index].cpu_history else 0.0))
        cpu = 0.0
        for index in order:
            need = self.views.need_cpu(vms[index])
            cpu += need
            lacking = self._fits_nowhere(name, takers, need, memory[index])
            if lacking:
                return ('VM %s fits on no other active host: %s: none has '
                        '%.1f cpu and %.1f MiB (%s) left under its fill '
                        'levels' % (vms[index].uuid, lacking, need,
                                    memory[index],
                                    self.views.algorithms.memory_basis))
            if index == largest and sum(memory) > mem_left + 1e-9:
                return self._short(sum(memory), mem_left, 'MiB')
        if cpu > cpu_left + 1e-9:
            return self._short(cpu, cpu_left, 'cpu')
        return None

    @staticmethod
    def _fits_nowhere(name, takers, cpu, mem):
        """What no taker but ``name`` has enough of for a VM of ``cpu``
        and ``mem``: None when one has both."""
        enough_cpu = False
        for left_cpu, left_mem, other in takers:
            if left_cpu < cpu:
                break
            if other == name:
                continue
            enough_cpu = True
            if left_mem >= mem:
                return None
        if not enough_cpu:
            return 'cpu'
        if not any(left_mem >= mem for _, left_mem, other in takers
                   if other != name):
            return 'memory'
        return 'cpu and memory'

    def _short(self, need, left, unit):
        return ('its VMs need %.1f %s in all (%s); the other active hosts '
                'have %.1f left under their fill levels' % (
                    need, unit, self.views.algorithms.memory_basis
                    if unit == 'MiB' else 'at their peaks', left))


def plan_round(hosts, algorithms, recent=None):
    """The Plan of one consolidation round over ``hosts`` (HostStates)
    with ``algorithms`` (an Algorithms), knowing ``recent`` (a Recent;
    None: no migration lately)."""
    recent = recent if recent is not None else Recent()
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

    budget = _Budget(algorithms.controls, recent)
    views = _Views(hosts, algorithms, budget)
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
                evacuation.append(Action(MIGRATE, why, vm.uuid, name, dest))
        emptied.add(name)
        views.leave(name)
        power_off.append(Action(POWER_OFF, why, source_host=name))

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
    cooling = sum(1 for vm in host.vms if _cooling(vm, algorithms, recent))
    if cooling:
        return ('%d of its VMs migrated less than migration_cooldown (%d s) '
                'ago; the others do not relieve it'
                % (cooling, controls.migration_cooldown))
    return 'it is still overloaded without any of its VMs'


def _cooling_reason(vms, algorithms, recent):
    """Why ``vms`` (an underloaded host's) may not move now, or None."""
    for vm in vms:
        left = _cooling(vm, algorithms, recent)
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
