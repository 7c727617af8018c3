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

Neat scanned every host for every VM (O(VMs × hosts)). Here the hosts sit
at the leaves of a max-tree over that fixed order holding each host's free
cpu and memory, so the first fitting host is found by descending only into
subtrees whose maxima fit, and a placement updates one root path.
"""
from memagg.drivers.consolidation import base

_ABSENT = float('-inf')


class _FitTree:
    """First position, in a fixed order, whose free cpu and memory are both
    at least a demand. Absent positions never fit."""

    def __init__(self, size):
        width = 1
        while width < max(size, 1):
            width *= 2
        self.width = width
        self.cpu = [_ABSENT] * (2 * width)
        self.mem = [_ABSENT] * (2 * width)

    def set(self, pos, cpu, mem):
        cpu_tree, mem_tree = self.cpu, self.mem
        node = pos + self.width
        cpu_tree[node] = cpu
        mem_tree[node] = mem
        node >>= 1
        while node:
            left, right = 2 * node, 2 * node + 1
            a, b = cpu_tree[left], cpu_tree[right]
            cpu_tree[node] = a if a > b else b
            a, b = mem_tree[left], mem_tree[right]
            mem_tree[node] = a if a > b else b
            node >>= 1

    def first_fit(self, cpu, mem, start=0):
        """The smallest position >= ``start`` that fits, or None."""
        cpu_tree, mem_tree, width = self.cpu, self.mem, self.width
        # Depth-first, left child popped first; each entry is a node and
        # the first position it covers, its span halving per level.
        stack = [(1, 0, width)]
        pop, push = stack.pop, stack.append
        while stack:
            node, low, span = pop()
            if (cpu_tree[node] < cpu or mem_tree[node] < mem
                    or low + span <= start):
                continue
            if node >= width:
                return low
            half = span >> 1
            push((2 * node + 1, low + half, half))
            push((2 * node, low, half))
        return None

    def maxima(self):
        """The largest free cpu and the largest free memory of any host."""
        return self.cpu[1], self.mem[1]


class BestFitDecreasing(base.Placement):
    """Neat's best fit decreasing over cpu and memory.

    Parameters: ``cpu_threshold`` (share of a host's cpu that may be used,
    default 0.8), ``ram_threshold`` (share of its usable memory, default
    0.95), ``last_n_vm_cpu`` (a VM's cpu demand is the mean of its last n
    samples, default 2), ``memory_basis`` (``wss``: WSS max-average, the
    default; ``booked``: flavour RAM, for comparison).

    A host's used cpu is its latest utilisation × ``cpu_total`` less the
    latest samples of its VMs being placed; its used memory is the sum over
    the VMs that stay. A VM is never placed back on the host it is on.
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

    def _free(self, host, moving):
        """Free (cpu, mem) of ``host`` once ``moving`` VMs have left."""
        cpu_used = (host.cpu_history[-1] * host.cpu_total
                    if host.cpu_history else 0.0)
        mem_used = 0.0
        for vm in host.vms:
            if vm.uuid in moving:
                cpu_used -= vm.cpu_history[-1] if vm.cpu_history else 0.0
            else:
                mem_used += self._vm_mem(vm)
                if not host.cpu_history:
                    cpu_used += _demand(vm, self.params['last_n_vm_cpu'])
        cpu_used = max(cpu_used, 0.0)
        return (self.params['cpu_threshold'] * host.cpu_total - cpu_used,
                self.params['ram_threshold'] * host.mem_usable_mb - mem_used)

    def place(self, hosts, vms):
        """A PlacementResult for ``vms`` over ``hosts`` (HostStates)."""
        result = base.PlacementResult()
        moving = {vm.uuid for vm in vms}
        last_n = self.params['last_n_vm_cpu']

        free = {}
        for host in hosts:
            if host.active:
                free[host.name] = self._free(host, moving)
            else:
                # A powered-off host runs nothing: all of it is free.
                free[host.name] = (
                    self.params['cpu_threshold'] * host.cpu_total,
                    self.params['ram_threshold'] * host.mem_usable_mb)
        order = sorted(free, key=lambda name: (free[name], name))
        position = {name: i for i, name in enumerate(order)}
        source = {vm.uuid: host.name for host in hosts for vm in host.vms}

        active = _FitTree(len(order))
        inactive = _FitTree(len(order))
        for host in hosts:
            tree = active if host.active else inactive
            tree.set(position[host.name], *free[host.name])

        demands = []
        for vm in vms:
            if not vm.cpu_history:
                result.unplaced[vm.uuid] = ('no cpu history: its demand is '
                                            'unknown')
                continue
            demands.append((_demand(vm, last_n), self._vm_mem(vm), vm.uuid))
        demands.sort(reverse=True)

        cpu_free = {name: free[name][0] for name in order}
        mem_free = {name: free[name][1] for name in order}
        for cpu, mem, uuid in demands:
            skip = position.get(source.get(uuid), -1)
            pos = _first_fit_except(active, cpu, mem, skip)
            if pos is None:
                pos = _first_fit_except(inactive, cpu, mem, skip)
                if pos is None:
                    result.unplaced[uuid] = self._reason(
                        cpu, mem, active, inactive)
                    continue
                inactive.set(pos, _ABSENT, _ABSENT)
                result.woken.append(order[pos])
            name = order[pos]
            cpu_free[name] -= cpu
            mem_free[name] -= mem
            active.set(pos, cpu_free[name], mem_free[name])
            result.placements[uuid] = name
        return result

    def _reason(self, cpu, mem, active, inactive):
        max_cpu = max(active.maxima()[0], inactive.maxima()[0])
        max_mem = max(active.maxima()[1], inactive.maxima()[1])
        basis = self.params['memory_basis']
        need = 'needs %.1f cpu and %.1f MiB (%s)' % (cpu, mem, basis)
        if max_cpu < cpu and max_mem < mem:
            why = 'cpu and memory'
        elif max_cpu < cpu:
            why = 'cpu'
        elif max_mem < mem:
            why = 'memory'
        else:
            why = 'cpu and memory on the same host'
        return ('no host has enough free %s: the VM %s; the most free is '
                '%.1f cpu, %.1f MiB' % (why, need, max(max_cpu, 0.0),
                                        max(max_mem, 0.0)))


def _demand(vm, last_n):
    tail = vm.cpu_history[-last_n:]
    return sum(tail) / len(tail)


def _first_fit_except(tree, cpu, mem, skip):
    """First fitting position other than ``skip`` (the VM's own host)."""
    pos = tree.first_fit(cpu, mem)
    if pos is not None and pos == skip:
        pos = tree.first_fit(cpu, mem, skip + 1)
    return pos
