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

"""MHOD's estimator, written for speed, against its definition written
plainly here: the same estimates, to the bit, and the same decisions over
a long random history."""
import random

from memagg.drivers.consolidation import overload_mhod as mhod


def _reference_estimate_p1(departures, window_sizes):
    # The definition, one estimate at a time.
    count = len(departures)
    if not count:
        return 0.0

    def estimate(k, w):
        start = max(0, k - w)
        window = departures[start:k]
        return sum(window) / len(window)

    selected = window_sizes[0]
    for w in window_sizes:
        if count < w:
            break
        recent = [estimate(k, w) for k in range(count - w + 1, count + 1)]
        mean = sum(recent) / len(recent)
        variance = sum((v - mean) ** 2 for v in recent) / (len(recent) - 1)
        p = recent[-1]
        if variance > p * (1 - p) / w:
            break
        selected = w
    return estimate(count, selected)


def _departures(rng):
    n = rng.randint(0, 150)
    change = rng.randint(0, n)
    before, after = rng.random(), rng.random()
    return [int(rng.random() < (before if i < change else after))
            for i in range(n)]


def test_estimates_equal_the_definition_to_the_bit():
    rng = random.Random(11)
    defaults = list(range(30, 101, 10))
    for _ in range(3000):
        departures = _departures(rng)
        sizes = defaults if rng.random() < 0.7 else sorted(
            {rng.randint(2, 60) for _ in range(rng.randint(1, 5))})
        expected = _reference_estimate_p1(departures, sizes)
        assert repr(mhod.estimate_p1(departures, sizes)) == repr(expected)


def test_decisions_over_a_long_random_history_equal_the_definition():
    rng = random.Random(3)
    detector = mhod.Mhod({})
    params = detector.params
    threshold = params['state_config'][0]
    # A host drifting in and out of overload, in regimes of varying length.
    history, level = [], 0.6
    decisions = []
    for step in range(3000):
        if rng.random() < 0.02:
            level = rng.uniform(0.5, 0.95)
        history.append(min(1.0, max(0.0, rng.gauss(level, 0.08))))
        window = history[-100:]
        got = detector.is_overloaded(window)

        states = [int(u >= threshold) for u in window]
        if len(states) < params['learning_steps'] or not states[-1]:
            expected = False
        else:
            departures = ([], [])
            for before, after in zip(states, states[1:]):
                departures[before].append(after)
            p01 = _reference_estimate_p1(departures[0],
                                         params['window_sizes'])
            p11 = _reference_estimate_p1(departures[1],
                                         params['window_sizes'])
            p = [[1 - p01, p01], [1 - p11, p11]]
            grid = [0.0, 0.5, 1.0]
            expected = p11 != 0 and mhod.best_policy(
                p, params['otf'],
                params['migration_time'] / params['time_step'],
                len(states), sum(states), grid) is None
        assert got == expected, step
        decisions.append(got)
    # The history must exercise both answers for the comparison to mean
    # anything.
    assert 100 < sum(decisions) < len(decisions) - 100
