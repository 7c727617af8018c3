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

"""What a consolidation round is built from: the [consolidation] options
naming its plug-ins, their parameters and its Controls, the Algorithms
memagg.scheduler.consolidation.load_algorithms constructs from them, and
what they make of a host's fill levels and of a VM's memory.

memagg-api (to check an audit's parameters) and memagg-sim (to sweep
them) read the option tables here.
"""
import dataclasses
import operator

from memagg.conf import consolidation as conf_consolidation
from memagg.drivers.consolidation import base

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

#: Every option a round's algorithms are built from; an audit may override
#: any of them.
OPTIONS = tuple(sorted(
    [name for name in FAMILIES] + [name + '_params' for name in FAMILIES]
    + ['underload_require', 'memory_basis'] + list(CONTROLS)))

#: The oslo.config option of each of CONTROLS: its type and bounds.
CONTROL_OPTS = {opt.dest: opt for opt in conf_consolidation.opts
                if opt.dest in CONTROLS}


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


def fill_levels(host, algorithms):
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


def vm_memory_of(algorithms):
    """A VM's memory in the round's basis, MiB, as a function of the VM:
    vm_memory for the many VMs of a round, the basis read once."""
    return operator.attrgetter('booked_mb' if algorithms.memory_basis
                               == 'booked' else 'wss_maxavg_mb')


def vm_memory(vm, algorithms):
    """``vm``'s memory in the round's basis, MiB."""
    return vm_memory_of(algorithms)(vm)
