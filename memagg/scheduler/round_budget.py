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

"""What past migrations leave a consolidation round (ALGORITHMS.md §3.6):
what is known of them as plain data (Recent), each VM's cool-down, and
the Budget of migrations the round's and the hosts' caps leave.
"""
import dataclasses
import math

#: The window of Recent.host_moves and max_migrations_per_host_hour, s.
HOUR_S = 3600


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


def cooling(vm, algorithms, recent):
    """Seconds left of ``vm``'s cool-down (0: none)."""
    moved = recent.moved_at.get(vm.uuid)
    cooldown = algorithms.controls.migration_cooldown
    if moved is None or not cooldown:
        return 0
    return max(0.0, moved + cooldown - recent.now)


class Budget:
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
