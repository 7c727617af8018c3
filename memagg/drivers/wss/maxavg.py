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

"""WSS max-average (ALGORITHMS.md §1.5): the size sizing and packing use.

MA_t is the mean of the last n estimates; the max-average is the largest
MA_t of the last ``slice_s`` seconds (sliding). An increase takes effect at
once; a decrease only once the larger averages are older than the slice.
"""
import collections
import datetime

from memagg.drivers.wss import base


def _seconds(now):
    if isinstance(now, datetime.datetime):
        return now.timestamp()
    return float(now)


class MaxAverage:
    """One VM's max-average. ``now`` is a datetime or seconds; give the
    estimates in time order."""

    def __init__(self, n=5, slice_s=3600):
        if n < 1:
            raise ValueError('n must be at least 1, not %r' % n)
        if slice_s <= 0:
            raise ValueError('slice_s must be positive, not %r' % slice_s)
        self.n = n
        self.slice_s = slice_s
        self._last = collections.deque(maxlen=n)
        # (time, MA) with MA strictly decreasing from the front: the front
        # is the max of the slice; a newer, larger MA makes older smaller
        # ones irrelevant.
        self._window = collections.deque()

    @property
    def value(self):
        """The current max-average in MiB, None before the first estimate."""
        if not self._window:
            return None
        return base.to_mb(self._window[0][1])

    def add(self, now, wss_mb):
        """Add the estimate of time ``now``; return the max-average (MiB).

        An invalid estimate (None) is skipped: the current value is
        returned, aged to ``now``.
        """
        t = _seconds(now)
        if wss_mb is not None:
            self._last.append(wss_mb)
            average = sum(self._last) / len(self._last)
            while self._window and self._window[-1][1] <= average:
                self._window.pop()
            self._window.append((t, average))
        while self._window and t - self._window[0][0] >= self.slice_s:
            self._window.popleft()
        return self.value
