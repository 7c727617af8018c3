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

"""Consolidation results built by hand for the tests of what memagg-sim
writes of them (its summary, plots and migration series)."""
import numpy as np

from memagg.sim import engine


def result(basis, active, mem, cpu, by_trigger, **totals):
    """A Result whose migrations are ``by_trigger`` ({reason: per-step
    counts}) and their sum per step."""
    by_trigger = {reason: np.array(steps, dtype=int)
                  for reason, steps in by_trigger.items()}
    return engine.Result(
        basis=basis, step_s=300.0, active_hosts=np.array(active),
        mem_overloaded=np.array(mem), cpu_overloaded=np.array(cpu),
        migrations=sum(by_trigger.values(), np.zeros(len(active), int)),
        migrations_by_trigger=by_trigger, **totals)


def results():
    """Both bases of a 4-step run: booked keeps its 4 hosts, wss packs
    into 2 with migrations, overloads and rounds to count."""
    return {
        'booked': result('booked', [4, 4, 4, 4], [0, 0, 0, 0],
                         [0, 1, 0, 0], {}, rounds=4),
        'wss': result('wss', [4, 2, 2, 2], [0, 1, 2, 0], [0, 0, 0, 1],
                      {'underload:cpu+memory': [3, 0, 0, 0],
                       'overload:memory': [0, 0, 1, 0]},
                      power_on=1, power_off=2, rounds=4, partial_rounds=1,
                      unplaced=2, kept=1, rejected=['x'], wall_s=1.23456),
    }
