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

"""MHOD against hand-computed cases (ALGORITHMS.md §3.2); the expected
times to migration are also checked against numpy's matrix inverse."""
import random

import numpy
import pytest

from memagg.common import exceptions
from memagg.drivers.consolidation import base
from memagg.drivers.consolidation import overload_mhod as mhod


def test_estimate_keeps_the_largest_stable_window():
    # Departures 0, 0, 0, 1; windows 2 and 4.
    # w = 2: estimates after departures 3 and 4 are 0/2 and 1/2: variance
    # 0.125, allowed 0.5 * 0.5 / 2 = 0.125: kept.
    # w = 4: estimates after 1..4 are 0, 0, 0, 1/4: mean 1/16, variance
    # (3 * (1/16)^2 + (3/16)^2) / 3 = 1/64, allowed 0.25 * 0.75 / 4 =
    # 3/64: kept, so the estimate is 1/4.
    assert mhod.estimate_p1([0, 0, 0, 1], [2, 4]) == 0.25


def test_estimate_falls_back_to_the_small_window_on_a_change():
    # Departures 0, 0, 0, 0, 1, 1: with w = 2 the last estimates are 1/2
    # and 1, variance 0.125 > 1 * 0 / 2: the smallest window (2) is used
    # anyway, its latest estimate is 1 (w = 4 would say 1/2).
    assert mhod.estimate_p1([0, 0, 0, 0, 1, 1], [2, 4]) == 1.0
    assert mhod.estimate_p1([], [2, 4]) == 0.0
    # Fewer departures than the smallest window: their fraction.
    assert mhod.estimate_p1([1, 0, 1], [30, 40]) == pytest.approx(2 / 3)


def test_transition_matrix():
    # States 0 0 1 1 0 1: from 0 the next states are 0, 1, 1; from 1 they
    # are 1, 0. Window 2: from 0, estimates 1/2 then 1 vary more than
    # 1 * 0 / 2 allows, but 2 is the only window: p01 = 1. From 1: 1 then
    # 1/2, variance 0.125 <= 0.125: p11 = 1/2.
    assert mhod.transition_matrix([0, 0, 1, 1, 0, 1], [2]) == [
        [0.0, 1.0], [0.5, 0.5]]


P = [[0.9, 0.1], [0.5, 0.5]]


def test_time_to_migration_by_hand():
    # m = (0, 0.5): a = 1, b = 0.5; det = (1 - 0.9)(1 - 0.25) - 0.5 * 0.1 *
    # 0.5 = 0.05; from state 1, L0 = 0.5 * 0.5 / 0.05 = 5, L1 = (1 - 0.9) /
    # 0.05 = 2.
    assert mhod.time_to_migration(P, (0, 0.5), (0, 1)) == pytest.approx(
        (5, 2))
    # Migrating at once from state 1: one step there, none in 0.
    assert mhod.time_to_migration(P, (0, 1), (0, 1)) == pytest.approx((0, 1))
    # Never migrating: no finite expectation.
    assert mhod.time_to_migration(P, (0, 0), (0, 1)) is None


def test_time_to_migration_matches_numpy():
    rng = random.Random(9)
    for _ in range(100):
        p01, p11 = rng.random(), rng.random()
        p = [[1 - p01, p01], [1 - p11, p11]]
        m = (rng.random(), rng.random())
        initial = rng.choice([(0, 1), (1, 0), (0.3, 0.7)])
        expected = numpy.array(initial) @ numpy.linalg.inv(
            numpy.eye(2) - numpy.diag([1 - m[0], 1 - m[1]]) @ numpy.array(p))
        assert mhod.time_to_migration(p, m, initial) == pytest.approx(
            tuple(expected))


def test_best_policy_by_hand():
    grid = [0, 0.5, 1]
    # 30 steps, 1 overloaded, no migration time. Times to migration from
    # state 1 (L0 + L1): (0, .5) 7, (.5, 0) 4.2, (1, 0) 3, (.5, .5) 2,
    # (1, .5) 5/3, (x, 1) 1; (0, 0) infinite. The longest, (0, .5), has an
    # overload fraction of (1 + 2) / (30 + 7) = 0.081 <= 0.1.
    assert mhod.best_policy(P, 0.1, 0, 30, 1, grid) == (0, 0.5)
    # With otf 0.05 even migrating at once gives (1 + 1) / 31 = 0.065.
    assert mhod.best_policy(P, 0.05, 0, 30, 1, grid) is None


def test_defaults():
    det = mhod.Mhod()
    assert det.params['state_config'] == [0.8]
    assert det.params['otf'] == 0.1
    assert det.params['window_sizes'] == [30, 40, 50, 60, 70, 80, 90, 100]
    assert det.params['learning_steps'] == 10
    assert det.params['bruteforce_step'] == 0.5
    assert mhod.Mhod(dimension='mem').params['state_config'] == [0.95]


def test_always_overloaded_host_is_overloaded():
    # From state 1 the host never left (p11 = 1): only migrating ends it,
    # and every policy keeps the overload fraction at 1 > 0.1.
    assert mhod.Mhod().is_overloaded([0.9] * 20)


def test_rare_overloads_within_otf_are_tolerated():
    history = ([0.5] * 18 + [0.9, 0.9]) * 3
    # 6 of 60 steps overloaded, migration 100 / 300 = 1/3 step. p11 =
    # 3/5 (departures from 1: 1 0 1 0 1). Migrating now has the lowest
    # overload fraction of any policy on the grid, (1/3 + 6 + 1) / (1/3 +
    # 60 + 1) = 0.12 > otf 0.1: overloaded. With otf 0.2 it and longer
    # policies fit.
    assert mhod.Mhod().is_overloaded(history)
    assert not mhod.Mhod({'otf': 0.2}).is_overloaded(history)


def test_no_decision_before_learning_or_outside_overload():
    det = mhod.Mhod()
    assert not det.is_overloaded([0.9] * 9)
    assert not det.is_overloaded([0.9] * 20 + [0.5])
    # Every overload so far lasted one step (p11 = 0).
    assert not det.is_overloaded(([0.5] * 9 + [0.9]) * 2)
    # Only the last history_size values count: within them, all 0.9.
    small = mhod.Mhod({'history_size': 12, 'otf': 0.5})
    assert small.is_overloaded([0.5] * 100 + [0.9] * 12)
    assert not small.is_overloaded([0.5] * 100 + [0.9] * 2)


@pytest.mark.parametrize('params,key', [
    ({'state_config': [0.5, 0.8]}, 'state_config'),
    ({'state_config': 0.8}, 'state_config'),
    ({'window_sizes': [40, 30]}, 'window_sizes'),
    ({'window_sizes': []}, 'window_sizes'),
    ({'bruteforce_step': 0}, 'bruteforce_step'),
    ({'bruteforce_step': 2}, 'bruteforce_step'),
    ({'otf': -0.1}, 'otf'),
])
def test_invalid_parameters_name_the_key(params, key):
    with pytest.raises(exceptions.InvalidParameter) as err:
        mhod.Mhod(params)
    assert err.value.kwargs['field'] == 'overload.mhod.' + key


def test_entry_point():
    assert type(base.load('overload', 'mhod')) is mhod.Mhod
