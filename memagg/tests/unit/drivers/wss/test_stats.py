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

"""The stats estimator (ALGORITHMS.md §1.1) on hand-computed cases:
the balloon driver's memory statistics and the shortage signal."""
import pytest

from memagg.drivers.wss import base
from memagg.drivers.wss import stats


GIB_KIB = 1024 * 1024


def _obs(**kwargs):
    kwargs.setdefault('m_cur_mb', 1024)
    return base.Observation(uuid='vm', m_init_mb=1024, max_mb=2048, **kwargs)


def test_stats_used_is_available_minus_usable():
    # 1 GiB available, 768 MiB usable: 1048576 - 786432 KiB = 256 MiB used.
    obs = _obs(stats={'available': GIB_KIB, 'usable': 768 * 1024,
                      'unused': 100 * 1024})

    est = stats.StatsEstimator().estimate(obs)

    assert est.wss_mb == 256
    assert est.source == 'stats'
    assert not est.shortage


def test_stats_falls_back_to_unused():
    # No usable: 1048576 - 524288 KiB unused = 512 MiB.
    obs = _obs(stats={'available': GIB_KIB, 'unused': 512 * 1024})

    assert stats.StatsEstimator().estimate(obs).wss_mb == 512


@pytest.mark.parametrize('memory_stats', [None, {}, {'available': GIB_KIB},
                                          {'usable': 1024}])
def test_stats_without_what_the_formula_needs_is_invalid(memory_stats):
    assert stats.StatsEstimator().estimate(
        _obs(stats=memory_stats)).wss_mb is None


@pytest.mark.parametrize('rates, shortage', [
    (None, False),
    ({'swap_in': 0.0, 'major_fault': 0.0}, False),
    # Any swap-in above the default 0 KiB/s.
    ({'swap_in': 4.0, 'major_fault': 0.0}, True),
    # Major faults: 50/s is the threshold, strictly above counts.
    ({'swap_in': 0.0, 'major_fault': 50.0}, False),
    ({'swap_in': 0.0, 'major_fault': 60.0}, True),
])
def test_shortage_signal_from_rates(rates, shortage):
    est = stats.StatsEstimator().estimate(_obs(stats_rates=rates))

    assert est.shortage is shortage


def test_shortage_thresholds_are_parameters():
    params = base.WssParams(shortage_swap_in_kb_s=10.0)
    obs = _obs(stats_rates={'swap_in': 8.0})

    assert not stats.StatsEstimator(params).estimate(obs).shortage
