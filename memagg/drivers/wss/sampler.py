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

"""Sampler estimator (ALGORITHMS.md §1.2): WSS = (f / n) * m_cur.

memagg-compute runs the native Sampler (memagg._native) of each VM over
the period and passes its collect() dict in the Observation; this module
only turns those numbers into an estimate.
"""
from memagg.drivers.wss import base


def accessed_fraction(sample):
    """f / n of a Sampler.collect() dict, or None when nothing was
    sampled."""
    if not sample:
        return None
    sampled = sample.get('sampled') or 0
    if sampled <= 0:
        return None
    fraction = sample.get('fraction')
    if fraction is None:
        fraction = sample.get('accessed', 0) / sampled
    return min(1.0, max(0.0, float(fraction)))


def sampler_mb(obs):
    """(f / n) * m_cur in MiB (a float), or None without a sample."""
    fraction = accessed_fraction(obs.sampler)
    if fraction is None:
        return None
    return fraction * obs.m_cur_mb


class SamplerEstimator(base.WssEstimator):
    """Host-side sampled accessed bits; cannot see beyond m_cur."""

    name = 'sampler'

    @property
    def needs_sampler(self):
        return True

    def estimate(self, obs):
        wss = sampler_mb(obs)
        return base.Estimate(
            wss_mb=None if wss is None else base.to_mb(wss),
            source='sampler',
            shortage=base.shortage_signal(obs, self.params))
