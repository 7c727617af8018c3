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

"""What placement sees of the hosts while a consolidation round plans its
moves (ALGORITHMS.md §3.6): each host's cpu as the sum of its VMs'
peaks, its VMs, and how far it may be filled (Views), and what the other
hosts have left, to tell without placement that a host cannot be emptied
(_Spare).
"""
import bisect
import itertools
import math

from memagg.drivers.consolidation import base
from memagg.scheduler import round_options


def peak(history, window):
    """The largest of the last ``window`` samples of ``history`` (0 if
    none): how a round weighs a host's or a VM's cpu, unless its caller
    knows the peaks (plan_round's ``peak``)."""
    # A slice: the simulator's VM histories make it a list at once.
    tail = history[-window:]
    return max(tail) if tail else 0.0


class Views:
    """What placement sees of each host as the round plans moves: its cpu
    utilisation (the sum of its VMs' peaks over their last ``fill_window``
    samples, or its latest utilisation when that is more), its VMs
    (copied, so the callers' HostStates are left as they were) and how far
    it may be filled (a base.Room); and of each VM placed, its cpu as the
    peak of its last ``fill_window`` samples.

    Before placement is asked to empty a host, why_not checks that the
    others have room for its VMs at all (_Spare): most underloaded hosts a
    round keeps are kept round after round, and that check is far cheaper
    than placement's.

    ``peak(history, window)`` answers a cpu history's peak (default:
    computed from it, see peak).
    """

    def __init__(self, hosts, algorithms, budget, peak=peak):
        self.window = algorithms.controls.fill_window
        self.peak = peak
        self.algorithms = algorithms
        #: ``memory(vm)``: ``vm``'s memory in the round's basis, MiB.
        self.memory = round_options.vm_memory_of(algorithms)
        self.hosts = {}
        self.rooms = {}
        self.weighed = {}
        self.needs = {}
        views, rooms = self.hosts, self.rooms
        fill_levels, moves_left = round_options.fill_levels, budget.host
        for host in hosts:
            name = host.name
            views[name] = base.HostState(
                name, host.cpu_total, host.mem_usable_mb,
                [self._reserved(host)] if host.cpu_history else [],
                host.mem_history[-1:], list(host.vms), host.active)
            cpu, mem = fill_levels(host, algorithms)
            moves = moves_left(name)
            rooms[name] = base.Room(
                cpu=cpu, mem=mem,
                moves=None if moves == math.inf else moves)
        self.received = set()
        self._spare = None

    def _reserved(self, host):
        """``host``'s cpu as placement counts it: the sum of its VMs'
        peaks over the fill window, or its latest utilisation when that is
        more (VMs not yet measured)."""
        latest = host.cpu_history[-1]
        window = self.window
        if window == 1 or host.cpu_total <= 0:
            return latest
        peak = self.peak
        peaks = sum([peak(vm.cpu_history, window) for vm in host.vms])
        return max(latest, peaks / host.cpu_total)

    def demand(self, vm):
        """``vm`` as placement weighs it: its cpu as its peak."""
        if self.window == 1 or not vm.cpu_history:
            return vm
        weighed = self.weighed.get(vm.uuid)
        if weighed is None:
            weighed = self.weighed[vm.uuid] = base.VmState(
                vm.uuid, [self.need_cpu(vm)], vm.wss_maxavg_mb,
                vm.booked_mb, vm.remote_mb, vm.dirty_mb_s)
        return weighed

    def need_cpu(self, vm):
        """The cpu ``vm`` takes at least wherever it goes: its peak, 0 with
        no history (with a window of 1 placement averages the latest
        samples, and no more than 0 is sure)."""
        if self.window == 1:
            return 0.0
        need = self.needs.get(vm.uuid)
        if need is None:
            need = self.needs[vm.uuid] = self.peak(vm.cpu_history,
                                                   self.window)
        return need

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
        return self._spare.why_not(self, name, vms)

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
    """What each active host of a round has left under its fill levels
    and the placement's own thresholds (Placement.shares), (cpu cores,
    MiB), and the VMs it may still receive: enough to tell, without asking
    placement, that a host's VMs cannot all move.

    The checks are necessary conditions of placement's success (it fills
    no host beyond its room, and counts a VM's cpu at no less than its
    peak, its memory as the same): they never keep a host placement could
    empty.
    """

    def __init__(self, views):
        self.left = {}
        shares = views.algorithms.placement.shares
        for name, view in views.hosts.items():
            if not view.active:
                continue
            cpu, mem = shares(views.rooms[name])
            used = view.cpu_history[-1] if view.cpu_history else 0.0
            self.left[name] = (
                max(0.0, cpu - used) * view.cpu_total,
                max(0.0, mem * view.mem_usable_mb
                    - sum(map(views.memory, view.vms))))
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

    def _takers(self, rooms):
        """The hosts that may receive VMs, by decreasing cpu left, and
        what they have left in all up to each of them: (takers, cpu
        sums, memory sums, slots, unlimited); the sums' first item is 0."""
        if self._index is None:
            takers = sorted(
                ((cpu, mem, name) for name, (cpu, mem) in self.left.items()
                 if rooms[name].moves != 0), reverse=True)
            slots = [rooms[name].moves for _, _, name in takers]
            self._index = (
                takers,
                list(itertools.accumulate((cpu for cpu, _, _ in takers),
                                          initial=0.0)),
                list(itertools.accumulate((mem for _, mem, _ in takers),
                                          initial=0.0)),
                sum(moves for moves in slots if moves is not None),
                sum(1 for moves in slots if moves is None))
        return self._index

    def why_not(self, views, name, vms):
        """Views.why_not, for ``views`` (the Views this was made of,
        passed rather than kept: a _Spare that kept it would make a
        reference cycle of every round's views, which only the cycle
        collector would free)."""
        takers, cpu_sums, mem_sums, slots, unlimited = self._takers(
            views.rooms)
        own = self.left.get(name)
        own_takes = own is not None and views.rooms[name].moves != 0
        if own_takes:
            moves = views.rooms[name].moves
            if moves is None:
                unlimited -= 1
            else:
                slots -= moves
        if not unlimited and slots < len(vms):
            return ('emptying it takes %d migrations; the other active '
                    'hosts may take part in %d more this hour '
                    '(max_migrations_per_host_hour %d)' % (
                        len(vms), slots, views.algorithms.controls
                        .max_migrations_per_host_hour))
        # Each VM must fit somewhere on its own, and all of them in what
        # the hosts that could take the least of them have left (the
        # others take none). The largest VM first, then the sums, then
        # the others, the busiest by their latest samples first (the
        # likeliest to fit nowhere).
        memory = [views.memory(vm) for vm in vms]
        needs = [views.need_cpu(vm) for vm in vms]
        largest = max(range(len(vms)), key=memory.__getitem__)
        lacking = self._fits_nowhere(name, takers, needs[largest],
                                     memory[largest])
        if lacking:
            return _nowhere(views, vms[largest], lacking, needs[largest],
                            memory[largest])
        # The VMs that need a given cpu or more go only to the hosts with
        # that much left (takers come by decreasing cpu left): for each
        # VM's need, from the largest, what those VMs need in all must fit
        # in what those hosts have left; with the least need, that is all
        # of them, memory too. (A margin for the rounding of placement's
        # own sums.)
        total = 0.0
        for need in sorted(needs, reverse=True):
            total += need
            count = _count_at_least(takers, need - _MARGIN)
            cpu_left, mem_left = cpu_sums[count], mem_sums[count]
            if own_takes and own[0] >= need - _MARGIN:
                cpu_left -= own[0]
                mem_left -= own[1]
            if total > cpu_left + _MARGIN:
                return _short(views, total, cpu_left, 'cpu', need)
        total_memory = sum(memory)
        if total_memory > mem_left + _MARGIN:
            return _short(views, total_memory, mem_left, 'MiB', need)
        for index in sorted(
                (index for index in range(len(vms)) if index != largest),
                key=lambda index: -(vms[index].cpu_history[-1]
                                    if vms[index].cpu_history else 0.0)):
            lacking = self._fits_nowhere(name, takers, needs[index],
                                         memory[index])
            if lacking:
                return _nowhere(views, vms[index], lacking, needs[index],
                                memory[index])
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


#: Slack on the checks' sums: placement adds the same numbers otherwise.
_MARGIN = 1e-9


def _count_at_least(takers, cpu):
    """How many of ``takers`` (by decreasing cpu left) have ``cpu`` left
    or more."""
    return bisect.bisect_right(takers, -cpu, key=_less_cpu)


def _less_cpu(taker):
    # Takers by decreasing cpu left are in increasing order of this.
    return -taker[0]


def _nowhere(views, vm, lacking, need, memory):
    return ('VM %s fits on no other active host: %s: none has %.1f cpu and '
            '%.1f MiB (%s) left under its fill levels' % (
                vm.uuid, lacking, need, memory,
                views.algorithms.memory_basis))


def _short(views, need, left, unit, least):
    """Why VMs needing ``need`` in all do not fit in the ``left`` of the
    hosts with ``least`` cpu left or more."""
    return ('its VMs that need %.1f cpu or more need %.1f %s in all (%s); '
            'the other active hosts with that much cpu left have %.1f left '
            'under their fill levels' % (
                least, need, unit, views.algorithms.memory_basis
                if unit == 'MiB' else 'at their peaks', left))
