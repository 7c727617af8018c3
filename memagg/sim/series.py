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

"""The series memagg-sim's plots draw that a Result (memagg.sim.engine)
does not hold as they are: migrations per hour by trigger, with the first
round's apart.

The first round (the one at step 0) consolidates the cloud as the trace
found it, often spread over every host: it plans many migrations at once,
which would flatten every later hour on a common scale. Its migrations are
counted apart; the hours and the steady rate are those of the migrations
after it.
"""
import dataclasses
import math

import numpy as np

HOUR_S = 3600.0


@dataclasses.dataclass
class MigrationRate:
    """A basis' migrations over time. ``start_days``: where each bin
    starts, in days; ``bin_hours``: each bin's length (an hour, or one
    step when steps are longer; the last may be shorter); ``per_hour``:
    trigger -> migrations per hour in each bin, the first round's left
    out; ``first_round``: trigger -> migrations the first round planned;
    ``steady_per_hour``: the migrations after the first round per hour of
    the trace after it."""

    start_days: np.ndarray
    bin_hours: np.ndarray
    per_hour: dict
    first_round: dict
    steady_per_hour: float


def migration_rate(result):
    """The MigrationRate of ``result``."""
    steps = len(result.migrations)
    per_bin = max(1, int(round(HOUR_S / result.step_s)))
    bins = math.ceil(steps / per_bin)
    bin_steps = np.full(bins, per_bin)
    bin_steps[-1] = steps - (bins - 1) * per_bin
    bin_hours = bin_steps * result.step_s / HOUR_S
    per_hour, first_round = {}, {}
    after = 0
    for trigger, series in sorted(result.migrations_by_trigger.items()):
        first_round[trigger] = int(series[0])
        later = np.array(series, dtype=int)
        later[0] = 0
        after += int(later.sum())
        padded = np.zeros(bins * per_bin, dtype=int)
        padded[:steps] = later
        per_hour[trigger] = padded.reshape(bins, per_bin).sum(axis=1) / (
            bin_hours)
    hours_after = (steps - 1) * result.step_s / HOUR_S
    return MigrationRate(
        start_days=np.arange(bins) * per_bin * result.step_s / 86400.0,
        bin_hours=bin_hours, per_hour=per_hour, first_round=first_round,
        steady_per_hour=after / hours_after if hours_after else 0.0)
