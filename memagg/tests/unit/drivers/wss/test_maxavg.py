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

"""WSS max-average (§1.5): growth at once, shrinking after the slice."""
import datetime

from memagg.drivers.wss import maxavg


def test_growth_applies_at_once_and_shrinking_after_the_slice():
    ma = maxavg.MaxAverage(n=5, slice_s=60)

    # MA of the last 5: 100; (100+200)/2 = 150; (100+200+300)/3 = 200.
    assert ma.add(0, 100) == 100
    assert ma.add(10, 200) == 150
    assert ma.add(20, 300) == 200
    # The estimates drop to 0: MA 150, 120, then (200+300+0+0+0)/5 = 100
    # and (300+0+0+0+0)/5 = 60; the 200 of t=20 stays for 60 s.
    assert ma.add(30, 0) == 200
    assert ma.add(40, 0) == 200
    assert ma.add(50, 0) == 200
    assert ma.add(70, 0) == 200
    # At t=80 the 200 of t=20 is 60 s old: the largest left is t=30's 150.
    assert ma.add(80, 0) == 150
    assert ma.add(90, 0) == 120
    # A rise is seen at once: (0+0+0+0+1000)/5 = 200 > the slice's 100.
    assert ma.add(100, 1000) == 200


def test_slice_is_sliding_from_the_newest_estimate():
    ma = maxavg.MaxAverage(n=1, slice_s=100)
    ma.add(0, 500)
    ma.add(50, 400)

    # At 99 the 500 is still inside; at 100 it leaves, 400 (t=50) remains.
    assert ma.add(99, 100) == 500
    assert ma.add(100, 100) == 400
    assert ma.add(150, 100) == 100


def test_invalid_estimates_are_skipped_and_datetimes_accepted():
    ma = maxavg.MaxAverage(n=2, slice_s=3600)
    t0 = datetime.datetime(2024, 1, 1, 12, 0, 0)

    assert ma.add(t0, None) is None
    assert ma.add(t0, 300) == 300
    # None adds nothing to the average: the next MA is (300+100)/2 = 200.
    assert ma.add(t0 + datetime.timedelta(seconds=10), None) == 300
    assert ma.add(t0 + datetime.timedelta(seconds=20), 100) == 300
    # An hour after the 300, the 200 (t0+20 s) is the largest left.
    assert ma.add(t0 + datetime.timedelta(seconds=3600), None) == 200
    assert ma.value == 200


def test_average_is_over_the_last_n_estimates():
    ma = maxavg.MaxAverage(n=3, slice_s=1)

    for t, wss in enumerate([90, 90, 90, 30]):
        result = ma.add(t, wss)

    # Slice of 1 s: only the newest MA, (90+90+30)/3 = 70.
    assert result == 70
