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

"""Overload detectors against hand-computed cases (ALGORITHMS.md §3.2).

The statistics (MAD, IQR, the weighted and robust line fits) are also
checked against numpy, an independent implementation.
"""
import random

import numpy
import pytest

from memagg.common import exceptions
from memagg.drivers.consolidation import base
from memagg.drivers.consolidation import overload


def test_threshold_defaults_per_dimension():
    cpu = overload.Threshold()
    mem = overload.Threshold(dimension='mem')
    assert cpu.params == {'threshold': 0.9}
    assert mem.params == {'threshold': 0.95}
    # 0.95 > 0.9 for cpu; for memory it must exceed 0.95.
    assert cpu.is_overloaded([0.1, 0.95])
    assert not mem.is_overloaded([0.1, 0.95])
    assert mem.is_overloaded([0.1, 0.96])
    assert not cpu.is_overloaded([0.99, 0.9])
    assert not cpu.is_overloaded([])


def test_last_n_average():
    det = overload.LastNAverage()
    assert det.params == {'threshold': 0.95, 'n': 2}
    # (1.0 + 0.92) / 2 = 0.96 > 0.95
    assert det.is_overloaded([0.9, 1.0, 0.92])
    # (0.9 + 0.98) / 2 = 0.94
    assert not det.is_overloaded([1.0, 0.9, 0.98])
    # One value while the history is short: 0.97 > 0.95.
    assert det.is_overloaded([0.97])
    assert not det.is_overloaded([])


def test_mad_by_hand():
    # median of [1, 1, 2, 2, 4, 6, 9] is 2; |x - 2| = [1, 1, 0, 0, 2, 4, 7],
    # whose median is 1.
    assert overload.mad([1, 1, 2, 2, 4, 6, 9]) == 1


def test_mad_matches_numpy():
    rng = random.Random(4)
    for size in (2, 5, 10, 31):
        data = [rng.random() for _ in range(size)]
        arr = numpy.array(data)
        expected = numpy.median(numpy.abs(arr - numpy.median(arr)))
        assert overload.mad(data) == pytest.approx(expected)


def test_mad_detector():
    det = overload.Mad()
    assert det.params == {'threshold': 2.5, 'limit': 10}
    # median = (0.5 + 0.7) / 2 = 0.6, every |x - 0.6| = 0.1 except 0.8's
    # 0.2, so MAD = 0.1 and the bound is 1 - 2.5 * 0.1 = 0.75.
    assert det.is_overloaded([0.5] * 5 + [0.7] * 4 + [0.8])
    # Same spread, latest 0.7 < 0.75.
    assert not det.is_overloaded([0.5] * 5 + [0.7] * 5)
    # Nine values: under the limit of 10, no decision yet.
    assert not det.is_overloaded([0.5] * 5 + [0.7] * 3 + [0.8])


def test_iqr_by_hand():
    # 1..8 with linear interpolation: Q1 at position 7 * 0.25 = 1.75 ->
    # 2 + 0.75 = 2.75; Q3 at 5.25 -> 6 + 0.25 = 6.25; IQR = 3.5.
    assert overload.iqr([8, 1, 7, 2, 6, 3, 5, 4]) == pytest.approx(3.5)
    assert overload.iqr([0.4]) == 0


def test_iqr_matches_numpy():
    rng = random.Random(5)
    for size in (2, 3, 10, 29):
        data = [rng.random() for _ in range(size)]
        q1, q3 = numpy.percentile(data, [25, 75])
        assert overload.iqr(data) == pytest.approx(q3 - q1)


def test_iqr_detector():
    det = overload.Iqr({'limit': 4})
    assert det.params == {'threshold': 1.5, 'limit': 4}
    # [0.2, 0.4, 0.6, 0.8]: Q1 = 0.2 + 0.75 * 0.2 = 0.35, Q3 = 0.6 +
    # 0.25 * 0.2 = 0.65, IQR = 0.3; bound = 1 - 1.5 * 0.3 = 0.55.
    assert det.is_overloaded([0.2, 0.4, 0.6, 0.8])
    assert not det.is_overloaded([0.8, 0.6, 0.4, 0.2])
    assert not det.is_overloaded([0.6, 0.4, 0.8])


def test_tricube_weights_by_hand():
    # n = 3: distances 2, 1, 0 over 3 -> (1 - 8/27)^3, (1 - 1/27)^3, 1.
    assert overload.tricube_weights(3) == pytest.approx(
        [(19 / 27) ** 3, (26 / 27) ** 3, 1.0])


def test_weighted_line_by_hand():
    # x = 0, 1, 2; y = 0, 0, 3; w = 1, 1, 2: W = 4, mean x = 5/4, mean y =
    # 6/4; Sxx = 25/16 + 1/16 + 2 * 9/16 = 11/4; Sxy = 15/8 + 3/8 + 9/4
    # = 9/2; slope = 18/11, intercept = 3/2 - 18/11 * 5/4 = -6/11.
    intercept, slope = overload.weighted_line([0, 1, 2], [0, 0, 3],
                                              [1, 1, 2])
    assert slope == pytest.approx(18 / 11)
    assert intercept == pytest.approx(-6 / 11)


def _numpy_line(ys, weights):
    # polyfit minimises sum((w_i * r_i)^2): pass sqrt of our weights.
    slope, intercept = numpy.polyfit(numpy.arange(len(ys)), ys, 1,
                                     w=numpy.sqrt(weights))
    return intercept, slope


def test_loess_fit_matches_numpy():
    rng = random.Random(6)
    data = [rng.random() for _ in range(30)]
    weights = overload.tricube_weights(30)
    assert overload.loess_fit(data) == pytest.approx(
        _numpy_line(data, weights))


def test_robust_loess_fit_matches_numpy():
    rng = random.Random(7)
    data = [0.02 * i + rng.gauss(0, 0.01) for i in range(20)]
    data[12] = 0.95
    weights = numpy.array(overload.tricube_weights(20))
    intercept, slope = _numpy_line(data, weights)
    residuals = numpy.array(data) - (intercept + slope * numpy.arange(20))
    scale = 6 * numpy.median(numpy.abs(residuals))
    bisquare = numpy.where(numpy.abs(residuals) < scale,
                           (1 - (residuals / scale) ** 2) ** 2, 0.0)
    expected = _numpy_line(data, weights * bisquare)
    assert overload.robust_loess_fit(data) == pytest.approx(expected)
    # The spike pulls the plain fit; the robust slope is nearer 0.02.
    assert abs(expected[1] - 0.02) < abs(slope - 0.02)


def test_robust_loess_fit_of_a_constant():
    intercept, slope = overload.robust_loess_fit([0.5] * 6)
    assert intercept == pytest.approx(0.5)
    assert slope == pytest.approx(0.0)


@pytest.mark.parametrize('cls', [overload.Lr, overload.Lrr])
def test_lr_extrapolates_by_the_migration_time(cls):
    params = {'length': 3, 'time_step': 300, 'migration_time': 600}
    # Points on a line fit exactly whatever the weights: y = 0.5 + 0.1 x
    # at x = 0..2; the migration takes 600 / 300 = 2 steps, so the
    # prediction is at x = 4: 0.9.
    det = cls(dict(params, threshold=0.89))
    assert det.predict([0.1, 0.5, 0.6, 0.7]) == pytest.approx(0.9)
    assert det.is_overloaded([0.1, 0.5, 0.6, 0.7])
    assert not cls(dict(params, threshold=0.91)).is_overloaded(
        [0.1, 0.5, 0.6, 0.7])
    # The safety parameter scales the prediction: 1.2 * 0.9 = 1.08 >= 1.
    assert cls(dict(params, threshold=1.0, param=1.2)).is_overloaded(
        [0.5, 0.6, 0.7])
    # Fewer values than length: no decision.
    assert det.predict([0.6, 0.7]) is None
    assert not det.is_overloaded([0.6, 0.7])


def test_lr_defaults():
    assert overload.Lr().params == {
        'threshold': 0.8, 'param': 1.0, 'length': 30,
        'time_step': 300.0, 'migration_time': 100.0}
    assert overload.Lrr(dimension='mem').params['threshold'] == 0.95
    with pytest.raises(exceptions.InvalidParameter) as err:
        overload.Lr({'length': 1})
    assert err.value.kwargs['field'] == 'overload.lr.length'
    assert 'fit a line' in str(err.value)


def test_lrr_ignores_an_old_spike_that_lr_follows():
    # Flat at 0.5 with one spike of 1.0 early in the window: the plain fit
    # slopes down, the robust one gives the spike ~no weight.
    data = [0.5, 0.5, 1.0] + [0.5] * 7
    params = {'length': 10, 'threshold': 0.5, 'migration_time': 0}
    assert not overload.Lr(params).is_overloaded(data)
    assert overload.Lrr(params).predict(data) == pytest.approx(0.5)


def test_otf():
    det = overload.Otf({'time_step': 300, 'migration_time': 300})
    assert det.params['otf'] == 0.2
    assert det.params['threshold'] == 0.8
    assert det.params['limit'] == 10
    # m = 1 step; two of ten steps >= 0.8: (1 + 2) / (1 + 10) = 0.27.
    assert det.is_overloaded([0.5] * 8 + [0.9, 0.9])
    # One of ten: (1 + 1) / 11 = 0.18 < 0.2.
    assert not det.is_overloaded([0.5] * 9 + [0.9])
    # Latest below the threshold: never, whatever the fraction.
    assert not det.is_overloaded([0.9] * 9 + [0.5])
    # Nine values: under the limit.
    assert not det.is_overloaded([0.5] * 7 + [0.9, 0.9])
    # Without migration time: 2 / 10 = 0.2 >= 0.2.
    assert overload.Otf({'migration_time': 0}).is_overloaded(
        [0.5] * 8 + [0.9, 0.9])
    assert overload.Otf(dimension='mem').params['threshold'] == 0.95


def test_otf_fraction_matches_direct_count():
    rng = random.Random(8)
    det = overload.Otf({'migration_time': 150, 'time_step': 300,
                        'otf': 0.3})
    for _ in range(200):
        data = [rng.random() for _ in range(rng.randint(5, 40))]
        over = numpy.count_nonzero(numpy.array(data) >= 0.8)
        expected = (len(data) >= 10 and data[-1] >= 0.8
                    and (0.5 + over) / (0.5 + len(data)) >= 0.3)
        assert det.is_overloaded(data) == expected


def test_host_overloaded_names_the_dimensions():
    cpu = overload.Threshold()
    mem = overload.Threshold(dimension='mem')
    assert overload.host_overloaded(cpu, mem, [0.95], [0.97]) == ['cpu',
                                                                  'mem']
    assert overload.host_overloaded(cpu, mem, [0.5], [0.97]) == ['mem']
    assert overload.host_overloaded(cpu, mem, [0.5], [0.9]) == []


@pytest.mark.parametrize('name,cls', [
    ('threshold', overload.Threshold),
    ('last_n_average', overload.LastNAverage),
    ('mad', overload.Mad),
    ('iqr', overload.Iqr),
    ('lr', overload.Lr),
    ('lrr', overload.Lrr),
    ('otf', overload.Otf),
])
def test_entry_points(name, cls):
    assert type(base.load('overload', name)) is cls


def test_invalid_parameters_name_the_key():
    with pytest.raises(exceptions.InvalidParameter) as err:
        base.load('overload', 'otf', {'otf': 2})
    assert err.value.kwargs['field'] == 'overload.otf.otf'
    with pytest.raises(exceptions.InvalidParameter) as err:
        base.load('overload', 'mad', {'safety': 2})
    assert err.value.kwargs['field'] == 'overload.mad.safety'


QUIET = [0.4, 0.5] * 20


@pytest.mark.parametrize('detector, limit', [
    (overload.Threshold({'threshold': 0.8}), 0.8),
    (overload.LastNAverage({'threshold': 0.7, 'n': 3}), 0.7),
    (overload.Otf({'threshold': 0.75, 'limit': 5}), 0.75),
    (base.load('overload', 'mhod'), 0.8),
    (overload.Threshold(dimension='mem'), 0.95),
])
def test_fill_limit_is_the_steady_use_the_detector_accepts(detector, limit):
    assert detector.fill_limit(QUIET) == pytest.approx(limit)
    # Held just under it from now on, a host is never overloaded; held
    # above it, it is.
    assert not any(detector.is_overloaded(QUIET + [limit - 0.01] * steps)
                   for steps in range(1, 60))
    assert detector.is_overloaded(QUIET + [limit + 0.05] * 60)


@pytest.mark.parametrize('detector', [
    overload.Lr({'threshold': 0.8, 'param': 1.25}),
    overload.Lrr(),
])
def test_fill_limit_of_regressions_covers_the_rise_to_it(detector):
    steady = detector.params['threshold'] / detector.params['param']
    limit = detector.fill_limit(QUIET)
    # A step up from the history is a rising line, extrapolated above
    # the new level for a while: the limit is below the steady one.
    assert limit < steady - 0.03
    assert detector.is_overloaded(QUIET + [steady - 0.01] * 10)
    assert not any(detector.is_overloaded(QUIET + [limit - 0.01] * steps)
                   for steps in range(1, 60))
    # Nothing to rise from: the steady level.
    assert detector.fill_limit([steady] * 40) == pytest.approx(steady)


@pytest.mark.parametrize('cls', [overload.Mad, overload.Iqr])
def test_fill_limit_of_adaptive_thresholds_is_searched(cls):
    detector = cls()
    # The threshold falls as the spread grows, and a host filled above its
    # past widens it: the limit is the highest level that, once it makes
    # half the history, is not overloaded.
    limit = detector.fill_limit(QUIET)
    assert limit < 1 - detector.params['threshold'] * detector.spread(QUIET)
    assert not detector.is_overloaded(QUIET + [limit] * len(QUIET))
    assert detector.is_overloaded(QUIET + [limit + 0.02] * len(QUIET))
    # A steady history is no exception: the step up from it widens the
    # spread.
    assert 0.6 < detector.fill_limit([0.5] * 20) < 0.8


class _MeanAbove(base.OverloadDetector):
    """A plug-in without a fill_limit of its own: overloaded when the mean
    of its history is above 0.6."""

    name = 'mean_above'

    def is_overloaded(self, utilization):
        return sum(utilization) / len(utilization) > 0.6


class _Never(_MeanAbove):

    def is_overloaded(self, utilization):
        return False


def test_fill_limit_of_any_plug_in_is_searched():
    # Ten samples at 0.4 then ten at L: mean (0.4 + L) / 2 > 0.6 above
    # L = 0.8. The search answers within 1 % below.
    limit = _MeanAbove().fill_limit([0.4] * 10)
    assert 0.79 <= limit <= 0.8
    assert not _MeanAbove().is_overloaded([0.4] * 10 + [limit] * 10)
    assert _Never().fill_limit([0.4] * 10) == 1.0
    assert _MeanAbove().fill_limit([]) == pytest.approx(0.6, abs=0.01)
