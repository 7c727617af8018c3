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

"""Overload detection (ALGORITHMS.md §3.2): must VMs leave a host before it
runs out of cpu or memory? Each detector judges one dimension's history
(0..1, oldest first); ``host_overloaded`` says a host is overloaded when any
dimension is.

Parameter names follow Neat's JSON parameters so a Neat configuration
loads unchanged; note that for ``mad`` and ``iqr`` Neat's ``threshold`` is
the safety factor s, not a utilisation. Defaults are Neat's published ones;
the memory dimension's utilisation threshold defaults to 0.95.
"""
import statistics

from memagg.drivers.consolidation import base

MEM_THRESHOLD = 0.95

# Neat's collection interval, and the time to live-migrate a 1 GiB VM at its
# default 10 MB/s migration bandwidth; set both from the deployment.
TIME_PARAMS = {'time_step': (300.0, base.positive),
               'migration_time': (100.0, base.non_negative)}


class Threshold(base.OverloadDetector):
    """Overloaded when the latest utilisation is above ``threshold``."""

    name = 'threshold'
    PARAMS = {'threshold': (0.9, base.fraction)}
    MEM_DEFAULTS = {'threshold': MEM_THRESHOLD}

    def is_overloaded(self, utilization):
        if not utilization:
            return False
        return utilization[-1] > self.params['threshold']

    def fill_limit(self, utilization):
        return self.params['threshold']


class LastNAverage(base.OverloadDetector):
    """Overloaded when the mean of the last ``n`` values is above
    ``threshold`` (fewer are averaged while the history is short)."""

    name = 'last_n_average'
    PARAMS = {'threshold': (0.95, base.fraction),
              'n': (2, base.positive_int)}
    MEM_DEFAULTS = {'threshold': MEM_THRESHOLD}

    def is_overloaded(self, utilization):
        window = utilization[-self.params['n']:]
        if not window:
            return False
        return sum(window) / len(window) > self.params['threshold']

    def fill_limit(self, utilization):
        return self.params['threshold']


def mad(data):
    """Median absolute deviation: median of |x - median(data)|."""
    centre = statistics.median(data)
    return statistics.median(abs(x - centre) for x in data)


def iqr(data):
    """Interquartile range Q3 - Q1, quartiles interpolated linearly between
    order statistics (numpy's default percentile method)."""
    if len(data) < 2:
        return 0.0
    q1, _, q3 = statistics.quantiles(data, n=4, method='inclusive')
    return q3 - q1


class _AdaptiveThreshold(base.OverloadDetector):
    """Overloaded when u[-1] >= 1 - s * spread(u), once the history holds
    ``limit`` values: the more the load varies, the earlier VMs leave.
    Subclasses set ``spread``."""

    def is_overloaded(self, utilization):
        if len(utilization) < self.params['limit']:
            return False
        bound = 1 - self.params['threshold'] * self.spread(utilization)
        return utilization[-1] >= bound


class Mad(_AdaptiveThreshold):
    """Adaptive threshold from the median absolute deviation."""

    name = 'mad'
    PARAMS = {'threshold': (2.5, base.non_negative),
              'limit': (10, base.positive_int)}
    spread = staticmethod(mad)


class Iqr(_AdaptiveThreshold):
    """Adaptive threshold from the interquartile range."""

    name = 'iqr'
    PARAMS = {'threshold': (1.5, base.non_negative),
              'limit': (10, base.positive_int)}
    spread = staticmethod(iqr)


def tricube_weights(n):
    """Weights of n points, oldest first, by distance from the newest:
    (1 - (d / n)^3)^3. Dividing by n rather than n - 1 keeps the oldest
    point's weight above zero so every point counts."""
    return [(1 - ((n - 1 - i) / n) ** 3) ** 3 for i in range(n)]


def weighted_line(xs, ys, weights):
    """(intercept, slope) minimising sum(w * (y - a - b*x)^2)."""
    total = sum(weights)
    x_mean = sum(w * x for w, x in zip(weights, xs)) / total
    y_mean = sum(w * y for w, y in zip(weights, ys)) / total
    sxx = sum(w * (x - x_mean) ** 2 for w, x in zip(weights, xs))
    sxy = sum(w * (x - x_mean) * (y - y_mean)
              for w, x, y in zip(weights, xs, ys))
    slope = sxy / sxx
    return y_mean - slope * x_mean, slope


def loess_fit(data):
    """Tricube-weighted line through ``data`` at x = 0..n-1."""
    xs = range(len(data))
    return weighted_line(xs, data, tricube_weights(len(data)))


def robust_loess_fit(data):
    """loess_fit, then refitted once with each weight scaled by the
    bisquare of its residual over 6 * median |residual|, so outliers pull
    the line less."""
    xs = range(len(data))
    weights = tricube_weights(len(data))
    intercept, slope = weighted_line(xs, data, weights)
    residuals = [y - intercept - slope * x for x, y in zip(xs, data)]
    scale = 6 * statistics.median(abs(r) for r in residuals)
    if scale == 0:
        # At least half the points lie on the line: it is already robust.
        return intercept, slope
    robust = [w * (1 - (r / scale) ** 2) ** 2 if abs(r) < scale else 0.0
              for w, r in zip(weights, residuals)]
    return weighted_line(xs, data, robust)


def _positive_length(value):
    value = base.positive_int(value)
    if value < 2:
        raise ValueError('must be 2 or more to fit a line, got %r' % value)
    return value


class Lr(base.OverloadDetector):
    """Local regression: fit a line to the last ``length`` values, predict
    the utilisation one migration time ahead; overloaded when
    param * prediction >= threshold."""

    name = 'lr'
    PARAMS = dict(TIME_PARAMS,
                  threshold=(0.8, base.fraction),
                  param=(1.0, base.positive),
                  length=(30, _positive_length))
    MEM_DEFAULTS = {'threshold': MEM_THRESHOLD}
    fit = staticmethod(loess_fit)

    def predict(self, utilization):
        """Predicted utilisation when a migration started now would end,
        or None while the history is shorter than ``length``."""
        length = self.params['length']
        if len(utilization) < length:
            return None
        intercept, slope = self.fit(utilization[-length:])
        ahead = self.params['migration_time'] / self.params['time_step']
        return intercept + slope * (length - 1 + ahead)

    def is_overloaded(self, utilization):
        predicted = self.predict(utilization)
        if predicted is None:
            return False
        return self.params['param'] * predicted >= self.params['threshold']

    def fill_limit(self, utilization):
        """The highest use that, held from now on, keeps the prediction
        under threshold / param while the line still rises from the
        history to it, and once it is steady.

        A prediction is a fixed weighted sum of the last ``length`` values
        (the fit is linear in them): with k new values at level L it is
        A_k + C_k L, so each k bounds L. For lrr the same bound is taken:
        its re-weighting pulls the line less towards a few new values.
        """
        length = self.params['length']
        weights = self._prediction_weights()
        limit = self.params['threshold'] / self.params['param']
        history = list(utilization)
        for new in range(1, length):
            old = length - new
            if len(history) < old:
                continue
            gain = sum(weights[old:])
            if gain <= 0:
                continue
            known = sum(w * u for w, u in zip(weights, history[-old:]))
            limit = min(limit, (self.params['threshold']
                                / self.params['param'] - known) / gain)
        return min(1.0, max(0.0, limit))

    def _prediction_weights(self):
        """c such that predict(u) = sum(c_i u_i) over the last
        ``length`` values of u, for the plain tricube fit."""
        length = self.params['length']
        ahead = self.params['migration_time'] / self.params['time_step']
        weights = tricube_weights(length)
        total = sum(weights)
        x_mean = sum(w * x for x, w in enumerate(weights)) / total
        sxx = sum(w * (x - x_mean) ** 2 for x, w in enumerate(weights))
        at = length - 1 + ahead
        return [w / total + (at - x_mean) * w * (x - x_mean) / sxx
                for x, w in enumerate(weights)]


class Lrr(Lr):
    """Robust local regression: as lr with bisquare re-weighting."""

    name = 'lrr'
    fit = staticmethod(robust_loess_fit)


class Otf(base.OverloadDetector):
    """Overload time fraction: while the latest value is at or above
    ``threshold`` (and the history holds ``limit`` values), overloaded when
    (m + overloaded steps) / (m + steps) >= ``otf``, m being the migration
    time in steps: the fraction of time overloaded, counting the coming
    migration as overloaded, would reach the allowed one.

    The steps counted are those of the history passed in, so it should
    cover the host since it was last emptied or started.
    """

    name = 'otf'
    PARAMS = dict(TIME_PARAMS,
                  otf=(0.2, base.fraction),
                  threshold=(0.8, base.fraction),
                  limit=(10, base.positive_int))
    MEM_DEFAULTS = {'threshold': MEM_THRESHOLD}

    def is_overloaded(self, utilization):
        threshold = self.params['threshold']
        if (len(utilization) < self.params['limit']
                or utilization[-1] < threshold):
            return False
        ahead = self.params['migration_time'] / self.params['time_step']
        over = sum(1 for u in utilization if u >= threshold)
        return (ahead + over) / (ahead + len(utilization)) >= \
            self.params['otf']

    def fill_limit(self, utilization):
        return self.params['threshold']


def host_overloaded(cpu_detector, mem_detector, cpu_history, mem_history):
    """The dimensions ('cpu', 'mem') in which a host with these histories
    is overloaded; empty when it is not."""
    return [dim for dim, high in (
        ('cpu', cpu_detector.is_overloaded(cpu_history)),
        ('mem', mem_detector.is_overloaded(mem_history))) if high]
