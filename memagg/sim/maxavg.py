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

"""WSS max-average of every VM at every step at once: the vectorised
equivalent of memagg.drivers.wss.maxavg.MaxAverage (ALGORITHMS.md §1.5)
for estimates on a fixed time grid.

At step t a VM's MA_t is the mean of its last ``n`` estimates (fewer
during its first n - 1 steps), summed oldest first as MaxAverage does;
WSS^maxavg_t is the largest MA of the steps less than ``slice_s`` seconds
before t, rounded to whole MiB (half up). The results equal MaxAverage's
fed the same estimates at the same times.
"""
import math

import numpy as np


def window_steps(slice_s, step_s):
    """Steps j >= 0 with j * step_s < slice_s: the MAs a slice holds."""
    return max(1, int(math.ceil(slice_s / step_s)))


def sliding_max(values, k):
    """out[t] = max(values[max(0, t-k+1) .. t]) along axis 0, in
    O(log k) passes (windows of doubling size, then two overlapping
    ones)."""
    out = values.copy()
    size = 1
    while size * 2 <= k:
        np.maximum(out[size:], out[:-size], out=out[size:])
        size *= 2
    rest = k - size
    if rest:
        result = out.copy()
        np.maximum(result[rest:], out[:-rest], out=result[rest:])
        return result
    return out


#: VMs computed at a time: a block's arrays stay in the processor's cache
#: through the passes over them.
BLOCK_VMS = 256


def maxavg(wss_mb, first, n=5, slice_s=3600.0, step_s=300.0):
    """WSS^maxavg (MiB, whole) of ``wss_mb`` (steps x VMs, 0 before each
    VM's ``first`` step); 0 before a VM's first step."""
    first = np.asarray(first)
    result = np.empty(wss_mb.shape)
    k = window_steps(slice_s, step_s)
    # Every value depends on its own VM's column only: blocks of columns
    # give the same figures as the whole.
    for lo in range(0, wss_mb.shape[1], BLOCK_VMS):
        hi = lo + BLOCK_VMS
        result[:, lo:hi] = _block(np.ascontiguousarray(wss_mb[:, lo:hi]),
                                  first[lo:hi], n, k)
    return result


def _block(wss_mb, first, n, k):
    steps = wss_mb.shape[0]
    total = np.zeros_like(wss_mb, dtype=float)
    # Oldest first, from zeros before the VM started: 0.0 + x is x, so the
    # sums are those of the VM's own last n estimates, in MaxAverage's
    # order.
    for back in range(n - 1, -1, -1):
        if back:
            total[back:] += wss_mb[:-back]
        else:
            total += wss_mb
    averages = total / n
    columns = np.arange(wss_mb.shape[1])
    for age in range(n - 1):
        rows = first + age
        young = rows < steps
        at = rows[young], columns[young]
        averages[at] = total[at] / (age + 1)
    result = sliding_max(averages, k)
    return np.floor(result + 0.5)
