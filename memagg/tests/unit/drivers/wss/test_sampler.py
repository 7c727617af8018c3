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

"""The sampler estimator (ALGORITHMS.md §1.2) on hand-computed cases."""
import pytest

from memagg.drivers.wss import base
from memagg.drivers.wss import sampler


def _obs(**kwargs):
    kwargs.setdefault('m_cur_mb', 1024)
    return base.Observation(uuid='vm', m_init_mb=1024, max_mb=2048, **kwargs)


def test_sampler_is_fraction_times_current():
    # f/n = 250/1000 of m_cur 1024 MiB = 256 MiB.
    obs = _obs(sampler={'sampled': 1000, 'accessed': 250, 'present': 900,
                        'fraction': 0.25})

    est = sampler.SamplerEstimator().estimate(obs)

    assert est.wss_mb == 256
    assert est.source == 'sampler'


def test_sampler_uses_accessed_over_sampled_without_fraction():
    # 333/1000 of 1000 MiB = 333 MiB.
    obs = _obs(m_cur_mb=1000, sampler={'sampled': 1000, 'accessed': 333})

    assert sampler.SamplerEstimator().estimate(obs).wss_mb == 333


def test_sampler_rounds_to_nearest_mib():
    # 0.1236 * 1000 = 123.6 -> 124.
    obs = _obs(m_cur_mb=1000, sampler={'sampled': 1000, 'accessed': 0,
                                       'fraction': 0.1236})

    assert sampler.SamplerEstimator().estimate(obs).wss_mb == 124


def test_sampler_cannot_see_beyond_current_allocation():
    obs = _obs(sampler={'sampled': 1000, 'accessed': 1000, 'fraction': 1.0})

    assert sampler.SamplerEstimator().estimate(obs).wss_mb == 1024


@pytest.mark.parametrize('sample', [None, {}, {'sampled': 0, 'accessed': 0}])
def test_sampler_without_samples_is_invalid(sample):
    assert sampler.SamplerEstimator().estimate(
        _obs(sampler=sample)).wss_mb is None
