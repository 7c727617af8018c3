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

"""VM placement: best fit decreasing with a memory dimension
(ALGORITHMS.md §3.4).

The decisions are Neat's: VMs are taken by decreasing (cpu, memory); hosts
are ordered once, at the start of the round, by increasing available
(cpu, memory) and a VM goes to the first host in that order where both fit;
a host woken for a VM joins the order at its capacity. Three things differ
from Neat:

* memory is what VMs keep resident (WSS max-average), unless
  ``memory_basis`` is ``booked``;
* when no active host fits, the smallest inactive host that can take the
  VM is woken (Neat woke inactive hosts in order even when they could not,
  and left them on), and only hosts that receive a VM are reported woken;
* a VM no host can take is reported with the reason and the others are
  still placed (Neat returned an empty plan).

Neat scanned every host for every VM (O(VMs x hosts)). Here VMs come in
decreasing cpu, so the cpu a host needs to take the next VM only falls: the
hosts with at least that much free cpu are "admitted" (a max-heap releases
the others as the demand falls, and a host that a placement leaves short is
sent back to it), and the admitted hosts' free memory sits at the leaves of
a max-tree in the fixed host order. The first fitting host is then the
leftmost admitted leaf with enough memory, found in O(log hosts) with no
backtracking, and a placement updates one root path.
"""
import heapq

from memagg.drivers.consolidation import base

_ABSENT = float('-inf')


class _Pool:
    """Hosts at fixed positions; finds the first one, in position order,
    with at least a given free cpu and memory.

    Demands must be asked for in decreasing cpu (``admit`` then
    ``first_fit``), which is what lets cpu be settled by the heap and only
    memory searched in the tree.
    """

    def __init__(self, size):
        width = 1
        while width < max(size, 1):
            width *= 2
        self.width = width
        # Free memory of admitted hosts; -inf for the others.
        self.tree = [_ABSENT] * (2 * width)
        self.cpu = {}
        self.mem = {}
        # VMs each host may still receive (None: any number).
        self.moves = {}
        # (-free cpu, position) of hosts not admitted for the current cpu.
        self.waiting = []

    def add(self, pos, cpu, mem, moves=None):
        self.cpu[pos] = cpu
        self.mem[pos] = mem
        self.moves[pos] = moves
        if moves is None or moves > 0:
            heapq.heappush(self.waiting, (-cpu, pos))

    def admit(self, cpu):
        """Admit every waiting host with at least ``cpu`` free."""
        waiting = self.waiting
        while waiting and -waiting[0][0] >= cpu:
            pos = heapq.heappop(waiting)[1]
            self._set(pos, self.mem[pos])

    def _set(self, pos, value):
        tree = self.tree
        node = pos + self.width
        tree[node] = value
        node >>= 1
        while node:
            a, b = tree[2 * node], tree[2 * node + 1]
            top = a if a > b else b
            if tree[node] == top:
                # The maxima above cannot change either.
                break
            tree[node] = top
            node >>= 1

    def first_fit(self, mem, start=0):
        """The smallest admitted position >= ``start`` with ``mem`` free,
        or None."""
        tree, width = self.tree, self.width
        if start >= width:
            return None
        node = start + width if start else 1
        # Climb right until a subtree holding a fit is reached, then go
        # down to its leftmost fitting leaf.
        while tree[node] < mem:
            while node & 1:
                node >>= 1
            if not node:
                return None
            node += 1
        while node < width:
            node *= 2
            if tree[node] < mem:
                node += 1
        return node - width

    def take(self, pos, cpu, mem):
        """Use ``cpu`` and ``mem`` of host ``pos``; it stays admitted only
        while another VM of the same cpu would fit (later ones need no
        more)."""
        self.cpu[pos] -= cpu
        self.mem[pos] -= mem
        if self.moves[pos] is not None:
            self.moves[pos] -= 1
            if not self.moves[pos]:
                # It may receive no more: out of the pool for good.
                self._set(pos, _ABSENT)
                return
        if self.cpu[pos] >= cpu:
            self._set(pos, self.mem[pos])
        else:
            self._set(pos, _ABSENT)
            heapq.heappush(self.waiting, (-self.cpu[pos], pos))

    def remove(self, pos):
        """Forget an admitted host."""
        self._set(pos, _ABSENT)

    def most_cpu(self):
        """The largest free cpu among waiting hosts (-inf if none)."""
        return -self.waiting[0][0] if self.waiting else _ABSENT

    def most_mem(self, skip=-1):
        """The largest free memory among admitted hosts other than
        position ``skip`` (-inf if none)."""
        if not 0 <= skip < self.width:
            return self.tree[1]
        saved = self.tree[skip + self.width]
        self._set(skip, _ABSENT)
        most = self.tree[1]
        self._set(skip, saved)
        return most


class BestFitDecreasing(base.Placement):
    """Neat's best fit decreasing over cpu and memory.

    Parameters: ``cpu_threshold`` (share of a host's cpu that may be used,
    default 0.8), ``ram_threshold`` (share of its usable memory, default
    0.95), ``last_n_vm_cpu`` (a VM's cpu demand is the mean of its last n
    samples, default 2), ``memory_basis`` (``wss``: WSS max-average, the
    default; ``booked``: flavour RAM, for comparison).

    A host's used cpu is its latest utilisation × ``cpu_total`` less the
    latest samples of its VMs being placed (with no utilisation history,
    the demand of the VMs that stay); its used memory is the sum over the
    VMs that stay. A VM is never placed back on the host it is on.

    A host's Room, when the round gives one, lowers the shares of it that
    may be used to ``min(cpu_threshold, room.cpu)`` and
    ``min(ram_threshold, room.mem)``, and a host takes no more than
    ``room.moves`` VMs.
    """

    name = 'best_fit_decreasing'
    PARAMS = {'cpu_threshold': (0.8, base.fraction),
              'ram_threshold': (0.95, base.fraction),
              'last_n_vm_cpu': (2, base.positive_int),
              'memory_basis': ('wss', base.choice('wss', 'booked'))}

    def _vm_mem(self, vm):
        if self.params['memory_basis'] == 'booked':
            return vm.booked_mb
        return vm.wss_maxavg_mb

    def shares(self, room):
        """The (cpu, mem) shares of a host that may be used: the
        thresholds, lowered to the room."""
        cpu, mem = self.params['cpu_threshold'], self.params['ram_threshold']
        if room is None:
            return cpu, mem
        return min(cpu, room.cpu), min(mem, room.mem)

    def _free(self, host, moving, room, source):
        """Free (cpu, mem) of ``host`` once ``moving`` VMs have left;
        those of them on it are entered in ``source`` (uuid -> host
        name)."""
        cpu_used = (host.cpu_history[-1] * host.cpu_total
                    if host.cpu_history else 0.0)
        mem_used = 0.0
        # _vm_mem and the history test, hoisted: this runs for every VM of
        # every host at every placement.
        booked = self.params['memory_basis'] == 'booked'
        measured = bool(host.cpu_history)
        for vm in host.vms:
            if vm.uuid in moving:
                source[vm.uuid] = host.name
                cpu_used -= vm.cpu_history[-1] if vm.cpu_history else 0.0
            else:
                mem_used += vm.booked_mb if booked else vm.wss_maxavg_mb
                if not measured:
                    cpu_used += _demand(vm, self.params['last_n_vm_cpu'])
        cpu_used = max(cpu_used, 0.0)
        cpu_share, mem_share = self.shares(room)
        return (cpu_share * host.cpu_total - cpu_used,
                mem_share * host.mem_usable_mb - mem_used)

    def place(self, hosts, vms, rooms=None):
        """A PlacementResult for ``vms`` over ``hosts`` (HostStates),
        within ``rooms`` (host name -> base.Room)."""
        result = base.PlacementResult()
        moving = {vm.uuid for vm in vms}
        last_n = self.params['last_n_vm_cpu']
        rooms = rooms or {}

        free = {}
        # The host each VM to place is on (the last, were it on several).
        source = {}
        for host in hosts:
            room = rooms.get(host.name)
            if host.active:
                free[host.name] = self._free(host, moving, room, source)
            else:
                # A powered-off host runs nothing: all of it is free.
                source.update((vm.uuid, host.name) for vm in host.vms
                              if vm.uuid in moving)
                cpu_share, mem_share = self.shares(room)
                free[host.name] = (cpu_share * host.cpu_total,
                                   mem_share * host.mem_usable_mb)
        order = sorted(free, key=lambda name: (free[name], name))
        position = {name: i for i, name in enumerate(order)}

        active = _Pool(len(order))
        inactive = _Pool(len(order))
        for host in hosts:
            pool = active if host.active else inactive
            room = rooms.get(host.name)
            pool.add(position[host.name], *free[host.name],
                     None if room is None else room.moves)

        demands = []
        for vm in vms:
            if not vm.cpu_history:
                result.unplaced[vm.uuid] = ('no cpu history: its demand is '
                                            'unknown')
                continue
            demands.append((_demand(vm, last_n), self._vm_mem(vm), vm.uuid))
        # Decreasing cpu first: _Pool relies on it.
        demands.sort(reverse=True)

        for cpu, mem, uuid in demands:
            skip = position.get(source.get(uuid), -1)
            active.admit(cpu)
            pos = _first_fit_except(active, mem, skip)
            if pos is None:
                inactive.admit(cpu)
                pos = _first_fit_except(inactive, mem, skip)
                if pos is None:
                    result.unplaced[uuid] = self._reason(
                        cpu, mem, active, inactive, skip)
                    continue
                inactive.remove(pos)
                active.add(pos, inactive.cpu[pos], inactive.mem[pos],
                           inactive.moves[pos])
                active.admit(cpu)
                result.woken.append(order[pos])
            active.take(pos, cpu, mem)
            result.placements[uuid] = order[pos]
        capped = len({pos for pool in (active, inactive)
                      for pos, moves in pool.moves.items() if moves == 0})
        if result.unplaced and capped:
            note = (' (%d host%s may receive no more VMs this round)'
                    % (capped, '' if capped == 1 else 's'))
            result.unplaced = {uuid: reason + note
                               for uuid, reason in result.unplaced.items()}
        return result

    def _reason(self, cpu, mem, active, inactive, skip):
        """Why no host but the VM's own (position ``skip``) takes it."""
        basis = self.params['memory_basis']
        admitted_mem = max(active.most_mem(skip), inactive.most_mem(skip))
        if admitted_mem == _ABSENT:
            most = max(active.most_cpu(), inactive.most_cpu(), 0.0)
            return ('cpu: no host has %.1f cpu free for it (the most free '
                    'is %.1f)' % (cpu, most))
        return ('memory: no host with %.1f cpu free has %.1f MiB (%s) free '
                'for it (the most such a host has is %.1f MiB)'
                % (cpu, mem, basis, max(admitted_mem, 0.0)))


def _demand(vm, last_n):
    tail = vm.cpu_history[-last_n:]
    return sum(tail) / len(tail)


def _first_fit_except(pool, mem, skip):
    """First fitting position other than ``skip`` (the VM's own host)."""
    pos = pool.first_fit(mem)
    if pos is not None and pos == skip:
        pos = pool.first_fit(mem, skip + 1)
    return pos
