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

"""Consolidation's shared types and the base class of each algorithm family
(ALGORITHMS.md §3): underload and overload detection, VM selection and
placement, each a plug-in in its own entry-point namespace.

Every plug-in takes a dict of JSON parameters, as Neat did, checked when it
is constructed: an unknown key, a missing required key or a bad value raises
InvalidParameter naming ``<family>.<plugin>.<key>``.
"""
import abc
import dataclasses

from memagg.common import exceptions
from memagg.common import plugins

NAMESPACE_PREFIX = 'memagg.consolidation.'
DIMENSIONS = ('cpu', 'mem')


@dataclasses.dataclass
class VmState:
    """One VM as consolidation sees it.

    ``cpu_history`` is absolute use in the unit of the host's ``cpu_total``,
    oldest first; memory sizes are MiB (``remote_mb`` is the part of its
    memory held in remote swap).

    ``wss_maxavg_mb`` is the memory the VM keeps resident and
    ``booked_mb`` its flavour's RAM, whatever the round's memory basis:
    the basis picks which of the two detection and placement count, while
    VM selection ranks by ``wss_maxavg_mb`` either way, as that is what a
    live migration copies (ALGORITHMS.md §3.3).

    ``dirty_mb_s`` is the rate at which the VM writes its memory, MiB/s,
    when it is known (None otherwise): a migration's cost then counts the
    pages pre-copy sends again (vm_selection.migration_time).
    """

    uuid: str
    cpu_history: list
    wss_maxavg_mb: float
    booked_mb: float
    remote_mb: float = 0.0
    dirty_mb_s: float = None


@dataclasses.dataclass
class HostState:
    """One compute host: capacity, utilisation histories (0..1, oldest
    first) and its VMs; ``active`` is false when it is powered off."""

    name: str
    cpu_total: float
    mem_usable_mb: float
    cpu_history: list
    mem_history: list
    vms: list = dataclasses.field(default_factory=list)
    active: bool = True


@dataclasses.dataclass
class Room:
    """How far a round lets placement fill one host, on top of the
    placement's own thresholds: its use in each dimension, as a share of
    its capacity, must stay at or under ``cpu`` and ``mem`` with the VMs
    placed on it, and it receives at most ``moves`` VMs (None: any
    number)."""

    cpu: float = 1.0
    mem: float = 1.0
    moves: int = None


@dataclasses.dataclass
class PlacementResult:
    """Where each placed VM goes (uuid -> host name), the inactive hosts
    that must be woken for it, and why each unplaced VM was not placed."""

    placements: dict = dataclasses.field(default_factory=dict)
    woken: list = dataclasses.field(default_factory=list)
    unplaced: dict = dataclasses.field(default_factory=dict)


#: Marks a parameter with no default: leaving it out is an error.
REQUIRED = object()


def fraction(value):
    """A number in [0, 1]."""
    value = number(value)
    if not 0 <= value <= 1:
        raise ValueError('must be between 0 and 1, got %r' % value)
    return value


def number(value):
    """Any real number (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError('must be a number, got %r' % (value,))
    return float(value)


def positive(value):
    """A number > 0."""
    value = number(value)
    if value <= 0:
        raise ValueError('must be greater than 0, got %r' % value)
    return value


def non_negative(value):
    """A number >= 0."""
    value = number(value)
    if value < 0:
        raise ValueError('must be 0 or more, got %r' % value)
    return value


def positive_int(value):
    """An integer >= 1."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError('must be an integer of 1 or more, got %r'
                         % (value,))
    return value


def choice(*allowed):
    """A checker accepting one of ``allowed``."""
    def check(value):
        if value not in allowed:
            raise ValueError('must be one of %s, got %r'
                             % (', '.join(map(str, allowed)), value))
        return value
    return check


class Algorithm(metaclass=abc.ABCMeta):
    """A consolidation plug-in with validated parameters.

    Subclasses set ``family``, ``name`` and ``PARAMS`` (key -> (default or
    REQUIRED, checker)); ``MEM_DEFAULTS`` overrides defaults when the
    plug-in judges the memory dimension. Checked values are in
    ``self.params``.
    """

    family = None
    name = None
    PARAMS = {}
    MEM_DEFAULTS = {}

    def __init__(self, params=None, dimension='cpu'):
        if dimension not in DIMENSIONS:
            raise exceptions.InvalidParameter(
                field='%s.%s.dimension' % (self.family, self.name),
                reason='must be one of %s' % ', '.join(DIMENSIONS))
        self.dimension = dimension
        self.params = self._validate(params or {})

    def _field(self, key):
        return '%s.%s.%s' % (self.family, self.name, key)

    def _validate(self, given):
        if not isinstance(given, dict):
            raise exceptions.InvalidParameter(
                field='%s.%s' % (self.family, self.name),
                reason='parameters must be a JSON object, got %r' % (given,))
        unknown = sorted(set(given) - set(self.PARAMS))
        if unknown:
            raise exceptions.InvalidParameter(
                field=self._field(unknown[0]),
                reason='unknown parameter; %s takes %s' % (
                    self.name, ', '.join(sorted(self.PARAMS)) or 'none'))
        checked = {}
        for key, (default, check) in self.PARAMS.items():
            if self.dimension == 'mem':
                default = self.MEM_DEFAULTS.get(key, default)
            if key not in given:
                if default is REQUIRED:
                    raise exceptions.InvalidParameter(
                        field=self._field(key),
                        reason='required parameter missing; add it to '
                               'the JSON parameters')
                checked[key] = default
                continue
            try:
                checked[key] = check(given[key])
            except ValueError as exc:
                raise exceptions.InvalidParameter(field=self._field(key),
                                                  reason=str(exc))
        return checked


class UnderloadDetector(Algorithm):
    """Decides from a host's utilisation history whether to empty it."""

    family = 'underload'

    @abc.abstractmethod
    def is_underloaded(self, utilization):
        """True when ``utilization`` (0..1, oldest first) is underloaded."""


class OverloadDetector(Algorithm):
    """Decides from a host's utilisation history whether to unload it."""

    family = 'overload'

    @abc.abstractmethod
    def is_overloaded(self, utilization):
        """True when ``utilization`` (0..1, oldest first) is overloaded."""

    def fill_limit(self, utilization):
        """The utilisation a host whose history is ``utilization`` may be
        filled to and stay at without this detector calling it
        overloaded.

        The built-in detectors answer from their parameters (and, those
        whose threshold follows the history's spread, from the history).
        This default suits any detector that calls a steady use overloaded
        no sooner than a higher one: it searches, to 1 % of capacity, the
        lowest level at which the history followed by as many samples
        again at that level is overloaded.
        """
        steady = max(len(utilization), 1)
        history = list(utilization)
        low, high = 0.0, 1.0
        if not self.is_overloaded(history + [high] * steady):
            return high
        while high - low > 0.01:
            middle = (low + high) / 2
            if self.is_overloaded(history + [middle] * steady):
                high = middle
            else:
                low = middle
        return low


class VmSelector(Algorithm):
    """Picks the VM to move off an overloaded host."""

    family = 'vm_selection'

    @abc.abstractmethod
    def select(self, host, vms):
        """One VmState of ``vms`` (candidates on ``host``) to migrate."""


class Placement(Algorithm):
    """Finds destination hosts for VMs leaving their hosts."""

    family = 'placement'

    @abc.abstractmethod
    def place(self, hosts, vms, rooms=None):
        """A PlacementResult for ``vms`` over ``hosts`` (HostStates),
        filling no host beyond its Room in ``rooms`` (host name -> Room;
        a host without one: as far as the placement's own thresholds
        allow)."""

    def shares(self, room):
        """The shares of a host's (cpu, memory) this placement fills at
        most, within Room ``room`` (None: no room given). A round's quick
        checks (memagg.scheduler.round_views) count what a host has left
        up to them, so a placement that stops short of its rooms says
        so here."""
        return (1.0, 1.0) if room is None else (room.cpu, room.mem)


def load(family, name, params=None, dimension='cpu', option=None):
    """Construct plug-in ``name`` of ``family`` (underload, overload,
    vm_selection or placement) with ``params``.

    An unknown name raises InvalidParameter naming ``option`` (default
    ``<family>``) and listing the installed plug-ins.
    """
    cls = plugins.load(NAMESPACE_PREFIX + family, name, option or family,
                       '%s plug-in' % family, invoke=False)
    return cls(params, dimension=dimension)
