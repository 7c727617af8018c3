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

"""Markov host overload detection, MHOD (ALGORITHMS.md §3.2).

The utilisation history becomes a two-state chain: state 1 (overloaded) at
or above ``state_config[0]``, state 0 below. Transition probabilities are
estimated with multisize sliding windows: for each window size the estimate
of p_i1 is the fraction of the last w departures from i that went to 1; the
largest window whose recent estimates vary no more than a binomial estimate
of that size would (p(1 - p) / w) is used, so the estimate follows changes
in the workload quickly and settles as it stays stable.

While the host is overloaded, a migration policy m = (m0, m1) (probability
of migrating in each state) is sought on a grid that maximises the expected
time until migration subject to the overload time fraction, counting the
migration itself as overloaded, staying within ``otf``. The host is reported
overloaded when no policy on the grid keeps within ``otf``.

The history passed in stands for the host's whole record (since it was last
emptied or started), as for ``otf``; only its last ``history_size`` values
are used.
"""
import itertools

from memagg.drivers.consolidation import base
from memagg.drivers.consolidation import overload


def _state_config(value):
    if (not isinstance(value, list) or len(value) != 1):
        raise ValueError('must be a list of one utilisation threshold (two '
                         'states), got %r' % (value,))
    return [base.fraction(value[0])]


def _window_sizes(value):
    if not isinstance(value, list) or not value:
        raise ValueError('must be a non-empty list of window sizes, got %r'
                         % (value,))
    sizes = [base.positive_int(v) for v in value]
    if sizes != sorted(set(sizes)) or sizes[0] < 2:
        raise ValueError('must be increasing integers of 2 or more, got %r'
                         % (value,))
    return sizes


def _step(value):
    value = base.positive(value)
    if value > 1:
        raise ValueError('must be in (0, 1], got %r' % value)
    return value


def _variance(values):
    # Sample variance in floats: statistics.variance's exact arithmetic is
    # far too slow for a decision taken every period on every host.
    mean = sum(values) / len(values)
    return sum([(v - mean) ** 2 for v in values]) / (len(values) - 1)


def estimate_p1(departures, window_sizes):
    """Estimated probability of moving to state 1 from a state whose
    departures (next states, oldest first) are ``departures``; 0 when it
    was never left.

    The estimate of window w after k departures is the fraction of 1s in
    the last min(k, w) of them; a window is kept while its last w
    estimates vary no more than p(1 - p) / w.
    """
    count = len(departures)
    if not count:
        return 0.0
    # ones[k]: 1s among the first k departures.
    ones = list(itertools.accumulate(departures, initial=0))
    selected = window_sizes[0]
    for w in window_sizes:
        if count < w:
            break
        # Estimates after departures count - w + 1 .. count: those before
        # the w-th cover all departures so far, the others the last w.
        first = count - w + 1
        recent = [ones[k] / k for k in range(first, w)]
        full = max(first, w)
        recent += [(new - old) / w for new, old in
                   zip(ones[full:], ones[full - w:count + 1 - w])]
        p = recent[-1]
        if _variance(recent) > p * (1 - p) / w:
            break
        selected = w
    start = max(0, count - selected)
    return (ones[count] - ones[start]) / (count - start)


def transition_matrix(states, window_sizes):
    """2x2 transition probabilities [[p00, p01], [p10, p11]] estimated from
    a 0/1 state history."""
    departures = ([], [])
    for before, after in zip(states, states[1:]):
        departures[before].append(after)
    p01 = estimate_p1(departures[0], window_sizes)
    p11 = estimate_p1(departures[1], window_sizes)
    return [[1 - p01, p01], [1 - p11, p11]]


def time_to_migration(p, m, initial):
    """Expected steps (L0, L1) spent in states 0 and 1 before migrating,
    starting from distribution ``initial``, when each step in state i
    migrates with probability m[i] and otherwise moves by ``p``; None when
    migration is never certain (the expectation is infinite).

    L = initial · (I - diag(1 - m) · p)^-1, the 2x2 inverse written out.
    """
    a, b = 1 - m[0], 1 - m[1]
    det = (1 - a * p[0][0]) * (1 - b * p[1][1]) - a * b * p[0][1] * p[1][0]
    if det <= 1e-12:
        return None
    l0 = (initial[0] * (1 - b * p[1][1]) + initial[1] * b * p[1][0]) / det
    l1 = (initial[0] * a * p[0][1] + initial[1] * (1 - a * p[0][0])) / det
    return l0, l1


def best_policy(p, otf, migration_steps, steps, overloaded_steps, grid):
    """The (m0, m1) on ``grid`` x ``grid`` with the longest expected time
    to migration whose overload time fraction stays within ``otf``, from
    state 1; None when no policy does."""
    best, best_time = None, 0.0
    for m0 in grid:
        for m1 in grid:
            times = time_to_migration(p, (m0, m1), (0, 1))
            if times is None:
                continue
            l0, l1 = times
            fraction = ((migration_steps + overloaded_steps + l1)
                        / (migration_steps + steps + l0 + l1))
            if fraction <= otf and l0 + l1 > best_time:
                best, best_time = (m0, m1), l0 + l1
    return best


class Mhod(base.OverloadDetector):
    """Markov host overload detection (see the module's docstring)."""

    name = 'mhod'
    PARAMS = dict(overload.TIME_PARAMS,
                  state_config=([0.8], _state_config),
                  otf=(0.1, base.fraction),
                  history_size=(500, base.positive_int),
                  window_sizes=(list(range(30, 101, 10)), _window_sizes),
                  bruteforce_step=(0.5, _step),
                  learning_steps=(10, base.positive_int))
    MEM_DEFAULTS = {'state_config': [overload.MEM_THRESHOLD]}

    def is_overloaded(self, utilization):
        params = self.params
        threshold = params['state_config'][0]
        # Most calls end here: decide before copying the history.
        if (min(len(utilization), params['history_size'])
                < params['learning_steps'] or utilization[-1] < threshold):
            return False
        history = utilization[-params['history_size']:]
        states = [int(u >= threshold) for u in history]
        p = transition_matrix(states, params['window_sizes'])
        if p[1][1] == 0:
            # Every overload so far ended after one step: let it pass.
            return False
        step = params['bruteforce_step']
        grid = [min(1.0, i * step) for i in range(int(1 / step) + 1)]
        if grid[-1] < 1.0:
            grid.append(1.0)
        policy = best_policy(
            p, params['otf'],
            params['migration_time'] / params['time_step'],
            len(states), sum(states), grid)
        return policy is None

    def fill_limit(self, utilization):
        # Below the overload state a host is never reported.
        return self.params['state_config'][0]
