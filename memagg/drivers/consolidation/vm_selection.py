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

"""VM selection: which VM leaves an overloaded host (ALGORITHMS.md §3.3).

Neat's selectors, with memory measured as what the VM really keeps
resident: the migration cost of a VM (:func:`migration_time`) is its WSS
max-average (``wss_maxavg_mb``), not the RAM its flavour books, since only
resident pages are copied, and, where it is known, the rate at which it
dirties them, which pre-copy must send again. Every selector is
deterministic given its inputs (ties go to the smallest uuid), except
``random``, which is reproducible with ``seed``.
"""
import random

from memagg.drivers.consolidation import base

#: Bandwidth a live migration is assumed to get, MiB/s (10 Gbit/s).
BANDWIDTH_MB_S = 1250.0


def migration_time(vm, bandwidth_mb_s=BANDWIDTH_MB_S):
    """Estimated seconds to live-migrate ``vm`` (a VmState) by pre-copy at
    ``bandwidth_mb_s``.

    Its resident memory W (WSS max-average) is sent once, then what it
    dirtied meanwhile, round after round: with a dirty rate D below the
    bandwidth B that adds up to W / (B - D) seconds; at or above it
    pre-copy never converges and the cost is infinite. Without a known
    dirty rate (``vm.dirty_mb_s`` None: memagg-compute does not measure
    one today) it is W / B, so VMs rank by resident memory, as Neat's
    minimum migration time ranked them by RAM.
    """
    dirty = vm.dirty_mb_s or 0.0
    if dirty >= bandwidth_mb_s:
        return float('inf')
    return vm.wss_maxavg_mb / (bandwidth_mb_s - dirty)


_BANDWIDTH = {'bandwidth_mb_s': (BANDWIDTH_MB_S, base.positive)}


def _mean_last(history, last_n):
    """Mean of the last ``last_n`` samples; a VM with no samples counts as
    idle (0) rather than being skipped, so it can still be chosen."""
    tail = history[-last_n:]
    return sum(tail) / len(tail) if tail else 0.0


def _last(history):
    return history[-1] if history else 0.0


def _optional_int(value):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError('must be an integer or null, got %r' % (value,))
    return value


class _Selector(base.VmSelector):

    def select(self, host, vms):
        """One VmState of ``vms`` to migrate off ``host``."""
        if not vms:
            raise ValueError('no candidate VM to select on host %s'
                             % host.name)
        return self._select(list(vms))


class Random(_Selector):
    """A VM chosen uniformly at random; ``seed`` (an integer) makes the
    sequence of choices reproducible, null seeds from the system."""

    name = 'random'
    PARAMS = {'seed': (None, _optional_int)}

    def __init__(self, params=None, dimension='cpu'):
        super().__init__(params, dimension)
        self._random = random.Random(self.params['seed'])

    def _select(self, vms):
        # Sorted so that the same seed gives the same VM whatever order the
        # caller listed the candidates in.
        return self._random.choice(sorted(vms, key=lambda vm: vm.uuid))


class MinimumUtilization(_Selector):
    """The VM with the lowest latest CPU use, as in Neat."""

    name = 'minimum_utilization'

    def _select(self, vms):
        return min(vms, key=lambda vm: (_last(vm.cpu_history), vm.uuid))


class MinimumMigrationTime(_Selector):
    """The VM with the lowest migration cost (:func:`migration_time` at
    ``bandwidth_mb_s``): the fastest to live-migrate."""

    name = 'minimum_migration_time'
    PARAMS = dict(_BANDWIDTH)

    def _select(self, vms):
        bandwidth = self.params['bandwidth_mb_s']
        return min(vms, key=lambda vm: (migration_time(vm, bandwidth),
                                        vm.uuid))


class MinimumMigrationTimeMaxCpu(_Selector):
    """Among the VMs with the lowest migration cost, the one with the
    highest mean CPU over its last ``last_n`` samples (default 2).

    "Among the lowest" means :func:`migration_time` (at
    ``bandwidth_mb_s``) ≤ min · (1 + ``tolerance``), min being the lowest
    cost of the candidates. With the default ``tolerance`` of 0 that is
    exactly the VMs at the minimum, as in Neat; a small tolerance (e.g.
    0.1) treats VMs within 10 % of it as equally cheap to move, since WSS
    estimates are never that precise.
    """

    name = 'minimum_migration_time_max_cpu'
    PARAMS = dict(_BANDWIDTH, last_n=(2, base.positive_int),
                  tolerance=(0.0, base.non_negative))

    def _select(self, vms):
        bandwidth = self.params['bandwidth_mb_s']
        cost = {vm.uuid: migration_time(vm, bandwidth) for vm in vms}
        bound = min(cost.values()) * (1 + self.params['tolerance'])
        last_n = self.params['last_n']
        cheap = [vm for vm in vms if cost[vm.uuid] <= bound]
        return min(cheap, key=lambda vm: (-_mean_last(vm.cpu_history, last_n),
                                          cost[vm.uuid], vm.uuid))


class MaximumRemote(_Selector):
    """The VM with the largest share of its booked memory in remote swap:
    those pages move with metadata only, so it leaves the most local
    memory for the fewest copied pages. Ties go to the lower migration
    cost (:func:`migration_time` at ``bandwidth_mb_s``)."""

    name = 'maximum_remote'
    PARAMS = dict(_BANDWIDTH)

    def _select(self, vms):
        bandwidth = self.params['bandwidth_mb_s']

        def share(vm):
            return vm.remote_mb / vm.booked_mb if vm.booked_mb > 0 else 0.0
        return min(vms, key=lambda vm: (-share(vm),
                                        migration_time(vm, bandwidth),
                                        vm.uuid))
