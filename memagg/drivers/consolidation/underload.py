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

"""Underload detection (ALGORITHMS.md §3.1): is a host idle enough to be
emptied and powered off? Each detector judges one dimension's history;
``host_underloaded`` combines cpu and mem and names the dimensions.
"""
from memagg.common import exceptions
from memagg.drivers.consolidation import base


class Threshold(base.UnderloadDetector):
    """Underloaded when the latest utilisation is at or below
    ``threshold``."""

    name = 'threshold'
    PARAMS = {'threshold': (0.5, base.fraction)}

    def is_underloaded(self, utilization):
        if not utilization:
            return False
        return utilization[-1] <= self.params['threshold']


class LastNAverage(base.UnderloadDetector):
    """Underloaded when the mean of the last ``n`` values is at or below
    ``threshold`` (fewer values are averaged while the history is short)."""

    name = 'last_n_average'
    PARAMS = {'threshold': (0.5, base.fraction),
              'n': (2, base.positive_int)}

    def is_underloaded(self, utilization):
        window = utilization[-self.params['n']:]
        if not window:
            return False
        return sum(window) / len(window) <= self.params['threshold']


class Never(base.UnderloadDetector):
    """Never reports an underload: hosts are only unloaded, not emptied."""

    name = 'never'

    def is_underloaded(self, utilization):
        return False


def host_underloaded(cpu_detector, mem_detector, cpu_history, mem_history,
                     require='both'):
    """The dimensions ('cpu', 'mem') that make a host with these histories
    underloaded: both are needed with ``require='both'`` (the default), one
    is enough with ``'either'``; empty when it is not underloaded."""
    if require not in ('both', 'either'):
        raise exceptions.InvalidParameter(
            field='underload.require',
            reason="must be 'both' or 'either', got %r" % (require,))
    dims = [dim for dim, low in (
        ('cpu', cpu_detector.is_underloaded(cpu_history)),
        ('mem', mem_detector.is_underloaded(mem_history))) if low]
    if require == 'both' and len(dims) < 2:
        return []
    return dims
