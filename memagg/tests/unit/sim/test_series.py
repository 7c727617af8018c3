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

"""The migration series memagg-sim plots (memagg.sim.series): the first
round apart, hourly bins, long steps."""
import numpy as np
import pytest

from memagg.sim import engine
from memagg.sim import series as sim_series
from memagg.tests.unit.sim import hand_results


def _steps(values):
    return np.array(values, dtype=int)


def test_migration_rate_sets_the_first_round_apart():
    # 30 steps of 5 minutes: bins of 12 steps, the last of 6.
    cpu = _steps([5] + [0] * 11 + [1] * 12 + [0] * 5 + [2])
    memory = _steps([2] + [0] * 13 + [3] + [0] * 15)
    result = hand_results.result(
        'wss', [1] * 30, [0] * 30, [0] * 30,
        {'overload:cpu': cpu, 'overload:memory': memory})
    assert result.by_trigger == {'overload:cpu': 19, 'overload:memory': 5}
    rate = sim_series.migration_rate(result)

    assert rate.first_round == {'overload:cpu': 5, 'overload:memory': 2}
    assert rate.bin_hours.tolist() == [1.0, 1.0, 0.5]
    assert rate.start_days.tolist() == pytest.approx([0, 1 / 24, 2 / 24])
    assert rate.per_hour['overload:cpu'].tolist() == [0, 12, 4]
    assert rate.per_hour['overload:memory'].tolist() == [0, 3, 0]
    # The bins and the first round add up to the totals.
    for trigger, total in result.by_trigger.items():
        assert (rate.first_round[trigger]
                + (rate.per_hour[trigger] * rate.bin_hours).sum()) == total
    # The steady rate leaves the first round out: 17 migrations over the
    # 29 steps after it.
    assert rate.steady_per_hour == pytest.approx(17 / (29 * 300 / 3600))


def test_migration_rate_bins_long_steps_one_each():
    series = _steps([0, 2, 0, 1])
    result = engine.Result(
        basis='wss', step_s=7200.0, active_hosts=np.ones(4, dtype=int),
        mem_overloaded=np.zeros(4), cpu_overloaded=np.zeros(4),
        migrations=series, migrations_by_trigger={'overload:cpu': series})
    assert result.by_trigger == {'overload:cpu': 3}
    rate = sim_series.migration_rate(result)

    assert rate.bin_hours.tolist() == [2.0] * 4
    assert rate.per_hour['overload:cpu'].tolist() == [0, 1, 0, 0.5]
    assert rate.steady_per_hour == pytest.approx(3 / 6)
