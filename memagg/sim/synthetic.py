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

"""memagg-sim's built-in synthetic trace: a cloud of identical hosts whose
VMs book far more memory than they use, with a daily CPU cycle and
working sets that change in phases.

Every VM runs for the whole trace. Its flavor is drawn from FLAVORS; its
working set is ``used_ratio`` of its booked memory on average (normal
spread ``used_spread`` across VMs, clipped to 0.05..1), multiplied in each
memory phase by a factor drawn uniformly in 1 +- ``mem_phase_change``;
phases last ``mem_phase_hours`` on average (exponentially distributed).
A share ``mem_phase_sync`` of the VMs follow cloud-wide phases instead
(the same switch times and factors for all of them), so working sets
also rise together.
Its CPU use is ``cpu_mean`` of its vCPUs on average (spread
``cpu_spread``), times 1 + ``diurnal_amplitude`` * cos(2 pi (h - peak) /
24) where h is the hour of the day and peak is ``diurnal_peak_hour`` plus a
per-VM normal jitter of ``diurnal_phase_spread_hours``. Both get a relative
noise of ``noise`` per sample and are capped at the VM's size.

VMs start spread over the hosts as a spreading scheduler leaves them: each,
in turn, on the host with the most free booked memory. The same parameters
(seed included) give the same trace.
"""
import dataclasses
import heapq

import numpy as np

from memagg.sim import trace as sim_trace

#: (vcpus, booked MiB, share of VMs)
FLAVORS = ((1, 2048, 0.30), (2, 4096, 0.35), (4, 8192, 0.25),
           (8, 16384, 0.10))


@dataclasses.dataclass
class Params:
    """The generator's named parameters (see the module's docstring)."""

    hosts: int = 1000
    vms: int = None
    days: float = 7.0
    step: float = 300.0
    host_cpus: float = 32.0
    host_memory_mb: float = 131072.0
    used_ratio: float = 0.4
    used_spread: float = 0.15
    cpu_mean: float = 0.15
    cpu_spread: float = 0.15
    diurnal_amplitude: float = 0.5
    diurnal_peak_hour: float = 14.0
    diurnal_phase_spread_hours: float = 2.0
    mem_phase_hours: float = 8.0
    mem_phase_change: float = 0.3
    mem_phase_sync: float = 0.2
    noise: float = 0.05
    seed: int = 0

    #: VMs per host when ``vms`` is not given.
    VMS_PER_HOST = 10

    @property
    def vm_count(self):
        return self.vms if self.vms is not None else (
            self.VMS_PER_HOST * self.hosts)

    def check(self):
        """Raise ValueError('<name>: <what is expected>') for the first
        parameter out of range."""
        def need(name, ok, what):
            if not ok:
                raise ValueError('%s: must be %s, got %r'
                                 % (name, what, getattr(self, name)))
        for name in ('hosts', 'vms'):
            value = getattr(self, name)
            if name == 'vms' and value is None:
                continue
            need(name, isinstance(value, int) and value >= 1,
                 'an integer >= 1')
        need('seed', isinstance(self.seed, int), 'an integer')
        for name in ('days', 'step', 'host_cpus', 'host_memory_mb',
                     'mem_phase_hours'):
            need(name, getattr(self, name) > 0, '> 0')
        for name in ('used_ratio', 'cpu_mean'):
            need(name, 0 < getattr(self, name) <= 1, 'in (0, 1]')
        for name in ('used_spread', 'cpu_spread', 'noise',
                     'diurnal_phase_spread_hours'):
            need(name, getattr(self, name) >= 0, '>= 0')
        for name in ('diurnal_amplitude', 'mem_phase_change',
                     'mem_phase_sync'):
            need(name, 0 <= getattr(self, name) <= 1, 'between 0 and 1')
        need('days', self.days * 86400 >= 2 * self.step,
             'at least two steps long')


def generate(params):
    """(Trace, Hosts) from ``params`` (a Params); ValueError naming a
    parameter when one is out of range or the VMs' booked memory does not
    fit on the hosts."""
    params.check()
    rng = np.random.default_rng(params.seed)
    steps = int(round(params.days * 86400 / params.step))
    count = params.vm_count
    hosts = sim_trace.make_hosts(params.hosts, params.host_cpus,
                                 params.host_memory_mb)

    shares = np.array([f[2] for f in FLAVORS])
    flavor = rng.choice(len(FLAVORS), size=count, p=shares / shares.sum())
    vcpus = np.array([f[0] for f in FLAVORS])[flavor]
    booked = np.array([f[1] for f in FLAVORS], dtype=float)[flavor]
    if booked.max() > params.host_memory_mb:
        raise ValueError('host_memory_mb: must be at least %d, the largest '
                         'flavor, got %g' % (booked.max(),
                                             params.host_memory_mb))

    ratio = np.clip(rng.normal(params.used_ratio, params.used_spread,
                               count), 0.05, 1.0)
    cpu_base = np.clip(rng.normal(params.cpu_mean, params.cpu_spread,
                                  count), 0.01, 1.0)
    peak = params.diurnal_peak_hour + rng.normal(
        0.0, params.diurnal_phase_spread_hours, count)

    hours = np.arange(steps) * (params.step / 3600.0)
    # In place, as the arrays are large; the same operations in the same
    # order as cos((hours - peak) * 2 pi / 24) and x * (1 + noise * z).
    cpu = np.subtract.outer(hours, peak)
    cpu *= 2 * np.pi / 24
    np.cos(cpu, out=cpu)
    cpu *= params.diurnal_amplitude
    cpu += 1.0
    cpu *= cpu_base
    cpu *= _noise(rng, params.noise, (steps, count))
    np.clip(cpu, 0.0, 1.0, out=cpu)
    cpu *= vcpus

    chance = params.step / (params.mem_phase_hours * 3600)
    change = params.mem_phase_change
    # A cumulative sum of booleans is far slower than of integers.
    phase = (rng.random((steps, count)) < chance).astype(np.intp)
    np.cumsum(phase, axis=0, out=phase)
    factors = rng.uniform(1 - change, 1 + change,
                          (int(phase.max()) + 1, count))
    wss = factors[phase, np.arange(count)]
    del phase, factors
    # VMs in step with the cloud-wide phases (batch windows, caches
    # warming together) share their switch times and factors.
    shared = np.cumsum(rng.random(steps) < chance)
    shared_factors = rng.uniform(1 - change, 1 + change, shared[-1] + 1)
    synced = rng.random(count) < params.mem_phase_sync
    wss[:, synced] = shared_factors[shared][:, None]
    wss *= ratio
    wss *= _noise(rng, params.noise, (steps, count))
    np.clip(wss, 0.01, 1.0, out=wss)
    wss *= booked

    return sim_trace.Trace(
        step_s=float(params.step), start_s=0.0,
        vm_ids=['vm-%05d' % i for i in range(count)],
        booked_mb=booked, vcpus=vcpus,
        first=np.zeros(count, dtype=int),
        last=np.full(count, steps - 1),
        initial_host=_spread(booked, hosts),
        cpu=cpu, wss_mb=wss, host_names=list(hosts.names)), hosts


def _noise(rng, noise, shape):
    """1 + noise x standard normal draws of ``shape``, made in place."""
    factor = rng.standard_normal(shape)
    factor *= noise
    factor += 1.0
    return factor


def _spread(booked, hosts):
    """Each VM, in turn, on the host with the most free booked memory."""
    free = [(-float(mem), i) for i, mem in enumerate(hosts.memory_mb)]
    heapq.heapify(free)
    placed = np.empty(len(booked), dtype=int)
    for v, size in enumerate(booked):
        most, host = free[0]
        if -most < size:
            raise ValueError(
                'vms: %d VMs book %.0f MiB, more than the %d hosts of '
                'host_memory_mb %g can hold; use fewer VMs or more hosts'
                % (len(booked), booked.sum(), len(hosts),
                   hosts.memory_mb[0]))
        heapq.heapreplace(free, (most + size, host))
        placed[v] = host
    return placed
