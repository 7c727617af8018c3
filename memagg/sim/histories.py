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

"""The utilisation histories memagg-sim's rounds read (memagg.sim.engine),
kept so that a round costs little more than the hosts it unloads:

* HostHistories: each host's cpu and memory histories, the lists the
  detectors read;
* VmCpu: a VM's cpu history, a slice of the trace read when a plug-in
  looks at it, with its peak over the fill window;
* Peaks: plan_round's ``peak``, answering from those.
"""
from collections import abc

import numpy as np

from memagg.scheduler import round_views


class HostHistories:
    """Every host's histories, the last ``length`` samples each, empty
    while it is off."""

    def __init__(self, hosts, length):
        self.length = length
        self.cpu = [[] for _ in range(hosts)]
        self.mem = [[] for _ in range(hosts)]

    def reset(self, h):
        """Host ``h`` powered on or off: its histories start again."""
        self.cpu[h] = []
        self.mem[h] = []

    def record(self, hosts, cpu, mem):
        """Append a step's samples to the histories of ``hosts`` (indices,
        a list): ``cpu`` and ``mem`` per host (arrays)."""
        keep = self.length
        cpus, mems = self.cpu, self.mem
        for h, c, m in zip(hosts, cpu[hosts].tolist(), mem[hosts].tolist()):
            # A host's two histories always have the same length.
            history, other = cpus[h], mems[h]
            history.append(c)
            other.append(m)
            if len(history) > keep:
                del history[0]
                del other[0]


class VmPeaks:
    """Every VM's largest cpu sample of the ``window`` steps up to step t,
    for steps asked in increasing order: van Herk and Gil-Werman's running
    maximum, the suffix maxima of the previous block of ``window`` steps
    and the prefix maximum of the current one, so each step costs a pass
    over the VMs and memory is one block, whatever the trace's length.
    ``cpu`` is the trace's steps x VMs cpu (0 where a VM does not run)."""

    def __init__(self, cpu, window):
        self.cpu = cpu
        self.window = max(1, window)
        self._block = None
        self._suffix = None
        self._prefix = None
        self._t = -1

    def at(self, t):
        """The VMs' peaks over steps ``max(0, t - window + 1)`` to
        ``t`` (an array the next call may change)."""
        w = self.window
        block = t // w
        if block != self._block:
            start = block * w
            if start:
                prev = self.cpu[start - w:start]
                self._suffix = np.maximum.accumulate(prev[::-1])[::-1]
            else:
                self._suffix = None
            self._block = block
            self._prefix = self.cpu[start].copy()
            self._t = start
        while self._t < t:
            self._t += 1
            np.maximum(self._prefix, self.cpu[self._t], out=self._prefix)
        lead = t - block * w + 1
        if self._suffix is None or lead >= w:
            return self._prefix
        return np.maximum(self._prefix, self._suffix[lead])


class VmCpu(abc.Sequence):
    """A VM's cpu samples ``row[start:stop]`` (oldest first), made into
    Python floats only when read: of the many VMs on an unloaded host,
    selection and placement read a few samples of a few. ``top`` is the
    largest of its last fill_window samples (set with the slice)."""

    __slots__ = ('_row', '_start', '_len', 'top')

    def __init__(self, row, start, stop, top):
        self._row = row
        self.reslice(start, stop, top)

    def reslice(self, start, stop, top):
        """Cover ``row[start:stop]`` instead, whose peak is ``top``."""
        self._start, self._len = start, max(stop - start, 0)
        self.top = top

    def __len__(self):
        return self._len

    def __getitem__(self, index):
        if isinstance(index, slice):
            return self._row[self._start:self._start + self._len][
                index].tolist()
        if index < 0:
            index += self._len
        if not 0 <= index < self._len:
            raise IndexError('history index out of range')
        return float(self._row[self._start + index])


class Peaks:
    """plan_round's ``peak`` for a round: a VM's its VmCpu's ``top``; any
    other history (or another window) computed as round_views.peak
    does."""

    def __init__(self, window):
        self.window = window

    def __call__(self, history, window):
        # _len rather than len(): a Sequence's __len__ is a Python call.
        if type(history) is VmCpu and window == self.window and history._len:
            return history.top
        return round_views.peak(history, window)
