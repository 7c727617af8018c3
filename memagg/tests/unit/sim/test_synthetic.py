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

"""The synthetic trace generator: deterministic per seed, shaped by its
named parameters, and strict about them."""
import numpy as np
import pytest

from memagg.sim import synthetic


def _small(**params):
    return synthetic.generate(synthetic.Params(
        hosts=params.pop('hosts', 6), days=params.pop('days', 1), **params))


def test_same_seed_same_trace_other_seed_other_trace():
    first, hosts = _small(seed=7)
    again, _ = _small(seed=7)
    other, _ = _small(seed=8)

    for name in ('cpu', 'wss_mb', 'booked_mb', 'vcpus', 'initial_host'):
        np.testing.assert_array_equal(getattr(first, name),
                                      getattr(again, name))
    assert not np.array_equal(first.wss_mb, other.wss_mb)
    assert not np.array_equal(first.cpu, other.cpu)
    assert hosts.names == ['host-%04d' % i for i in range(6)]


def test_shape_and_bounds():
    trace, hosts = _small(days=2, step=600, vms=40)

    assert trace.cpu.shape == trace.wss_mb.shape == (288, 40)
    assert trace.step_s == 600
    assert (trace.first == 0).all() and (trace.last == 287).all()
    assert (trace.cpu >= 0).all()
    assert (trace.cpu <= trace.vcpus).all()
    assert (trace.wss_mb > 0).all()
    assert (trace.wss_mb <= trace.booked_mb).all()
    # Spread placement: every VM placed, no host booked beyond its memory.
    booked = np.bincount(trace.initial_host, trace.booked_mb, len(hosts))
    assert (booked <= hosts.memory_mb).all()
    assert trace.vm_ids[0] == 'vm-00000'


def test_used_ratio_and_diurnal_peak_follow_the_parameters():
    trace, _ = _small(hosts=20, used_ratio=0.3, used_spread=0.0,
                      mem_phase_change=0.0, noise=0.0, diurnal_amplitude=0.8,
                      diurnal_peak_hour=6, diurnal_phase_spread_hours=0.0,
                      cpu_spread=0.0)

    assert trace.wss_mb / trace.booked_mb == pytest.approx(0.3)
    total = trace.cpu.sum(axis=1)
    hour_of_peak = np.argmax(total) * trace.step_s / 3600
    assert hour_of_peak == pytest.approx(6, abs=0.1)
    assert total.min() / total.max() == pytest.approx(0.2 / 1.8, rel=1e-6)


def test_memory_phases_change_the_working_set_level():
    steady, _ = _small(noise=0.0, mem_phase_change=0.0)
    phased, _ = _small(noise=0.0, mem_phase_change=0.5, mem_phase_hours=2)

    assert (np.diff(steady.wss_mb, axis=0) == 0).all()
    changes = (np.diff(phased.wss_mb, axis=0) != 0).sum(axis=0)
    # About 12 phase changes per VM in a day of 2-hour phases.
    assert 6 < changes.mean() < 18


@pytest.mark.parametrize('params, message', [
    (dict(hosts=0), 'hosts: must be an integer >= 1, got 0'),
    (dict(vms=0), 'vms: must be an integer >= 1, got 0'),
    (dict(used_ratio=0), 'used_ratio: must be in (0, 1], got 0'),
    (dict(diurnal_amplitude=1.5),
     'diurnal_amplitude: must be between 0 and 1, got 1.5'),
    (dict(step=-1), 'step: must be > 0, got -1'),
    (dict(days=0.001), 'days: must be at least two steps long'),
    (dict(host_memory_mb=8000),
     'host_memory_mb: must be at least 16384, the largest flavor'),
    (dict(vms=500), 'vms: 500 VMs book'),
])
def test_bad_parameters_are_named(params, message):
    with pytest.raises(ValueError) as error:
        _small(**params)

    assert str(error.value).startswith(message)
