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

"""A consolidation round's result (ALGORITHMS.md §3.5): its Plan, and the
ordered Actions memagg.scheduler.migration carries out.

Kept apart from the round (memagg.scheduler.consolidation) so that the
executors read the action types without importing the planner.
"""
import dataclasses

MIGRATE = 'migrate'
POWER_ON = 'power_on'
POWER_OFF = 'power_off'


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
