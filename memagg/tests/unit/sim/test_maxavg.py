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

"""The vectorised WSS max-average equals MaxAverage's, VM by VM."""
import numpy as np
import pytest

from memagg.drivers.wss import maxavg as wss_maxavg
from memagg.sim import maxavg


@pytest.mark.parametrize('n, slice_s, step_s', [
    (5, 3600, 300), (3, 3650, 300), (1, 100, 300), (7, 7200, 60)])
def test_equals_max_average_fed_the_same_estimates(n, slice_s, step_s):
    rng = np.random.default_rng(3)
    steps, vms = 120, 12
    wss = rng.uniform(0, 4000, (steps, vms))
    first = rng.integers(0, 40, vms)
    for v in range(vms):
        wss[:first[v], v] = 0

    got = maxavg.maxavg(wss, first, n, slice_s, step_s)

    for v in range(vms):
        reference = wss_maxavg.MaxAverage(n, slice_s)
        expected = [reference.add(t * step_s, wss[t, v])
                    for t in range(first[v], steps)]
        assert got[first[v]:, v].tolist() == expected
        assert (got[:first[v], v] == 0).all()


@pytest.mark.parametrize('k', [1, 2, 3, 5, 8, 12, 13])
def test_sliding_max_matches_a_plain_loop(k):
    values = np.random.default_rng(k).uniform(size=(40, 3))

    got = maxavg.sliding_max(values, k)

    for t in range(40):
        assert got[t].tolist() == values[max(0, t - k + 1):t + 1].max(
            axis=0).tolist()


def test_window_steps():
    assert maxavg.window_steps(3600, 300) == 12
    assert maxavg.window_steps(3650, 300) == 13
    assert maxavg.window_steps(100, 300) == 1


def test_blocks_of_vms_give_the_figures_of_the_whole(monkeypatch):
    rng = np.random.default_rng(5)
    wss = rng.uniform(0, 4000, (60, 23))
    first = rng.integers(0, 20, 23)
    for v in range(23):
        wss[:first[v], v] = 0
    whole = maxavg.maxavg(wss, first)

    # 23 VMs in blocks of 5: four whole blocks and a short one.
    monkeypatch.setattr(maxavg, 'BLOCK_VMS', 5)
    blocks = maxavg.maxavg(wss, first)

    assert whole.shape == blocks.shape == (60, 23)
    assert blocks.tolist() == whole.tolist()
