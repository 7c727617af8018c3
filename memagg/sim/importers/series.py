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

"""A VM's samples on memagg-sim's step grid, and the trace CSV (and hosts
CSV) they are written to, one VM at a time.

Grid: step k covers [origin + k step, origin + (k + 1) step) of the
source's clock and is written as time k x step. A VM's samples in one step
are merged: cpu is their mean (cores used over the step), wss_mb their
largest (the memory the step touched), booked_mb and vcpus the largest
over the VM's life. A run of at most ``max_gap`` empty steps between two
samples is filled with the step before it; a longer one ends the VM and
its next sample starts a new one, named ``VM#2``, ``VM#3``... A cpu above
vcpus or a wss_mb above booked_mb is clipped (and counted).
"""
import collections
import csv
import math

from memagg.sim import trace as sim_trace


class _Step:
    __slots__ = ('cpu', 'samples', 'wss', 'host')

    def __init__(self, sample):
        self.cpu, self.samples = sample.cpu, 1
        self.wss, self.host = sample.wss_mb, sample.host

    def add(self, sample):
        self.cpu += sample.cpu
        self.samples += 1
        self.wss = max(self.wss, sample.wss_mb)


Part = collections.namedtuple('Part', 'name first booked_mb vcpus host '
                                      'cpu wss_mb')


def parts(name, samples, step, origin, max_gap, counts):
    """The VMs ``samples`` make on the grid (see the module's docstring):
    a list of Part, ``first`` the index of its first step, ``cpu`` and
    ``wss_mb`` one value per step from there."""
    steps, sizes = {}, {}
    for sample in samples:
        k = math.floor((sample.time - origin) / step)
        cell = steps.get(k)
        if cell is None:
            steps[k] = _Step(sample)
            sizes[k] = (sample.booked_mb, sample.vcpus)
        else:
            cell.add(sample)
            counts.note('samples merged into a step with others')
            sizes[k] = (max(sizes[k][0], sample.booked_mb),
                        max(sizes[k][1], sample.vcpus))
    found = []
    run = []
    for k in sorted(steps):
        if run and k - run[-1] - 1 > max_gap:
            found.append(run)
            run = []
        run.append(k)
    if run:
        found.append(run)
    if len(found) > 1:
        counts.note('VMs split at a gap longer than --max-gap')
    return [_part(name if i == 0 else '%s#%d' % (name, i + 1), run, steps,
                  sizes, counts)
            for i, run in enumerate(found)]


def _part(name, run, steps, sizes, counts):
    booked = max(sizes[k][0] for k in run)
    vcpus = max(1, int(math.ceil(max(sizes[k][1] for k in run) - 1e-9)))
    cpu, wss = [], []
    previous = None
    for k in run:
        if previous is not None and k - previous > 1:
            counts.note('steps filled (gap up to --max-gap)', k - previous - 1)
            cpu.extend([cpu[-1]] * (k - previous - 1))
            wss.extend([wss[-1]] * (k - previous - 1))
        cell = steps[k]
        used = cell.cpu / cell.samples
        if used > vcpus:
            counts.note('cpu cells clipped to vcpus')
            used = vcpus
        if cell.wss > booked:
            counts.note('wss_mb cells clipped to booked_mb')
        cpu.append(used)
        wss.append(min(cell.wss, booked))
        previous = k
    return Part(name, run[0], booked, vcpus, steps[run[0]].host, cpu, wss)


class Writer:
    """Writes VMs to a trace CSV at ``path`` (memagg.sim.trace's format),
    counting rows, VMs and steps, and what --hosts-out needs: the hosts
    the trace names and the booked memory and vCPUs at each step."""

    def __init__(self, stream, step, origin, max_gap, counts):
        self.out = csv.writer(stream)
        self.out.writerow(sim_trace.TRACE_COLUMNS
                          + sim_trace.OPTIONAL_COLUMNS)
        self.step, self.origin, self.max_gap = step, origin, max_gap
        self.counts = counts
        self.rows = self.vms = 0
        self.first = self.last = None
        self.hosts = {}
        self.booked = collections.Counter()
        self.vcpus = collections.Counter()

    def write(self, name, samples):
        """Write the VM ``name`` of ``samples``; the number of VMs it made
        (0 without samples, more when split)."""
        made = parts(name, samples, self.step, self.origin, self.max_gap,
                     self.counts)
        for part in made:
            self._write(part)
        return len(made)

    def _write(self, part):
        booked = round(part.booked_mb, 3)
        for i, (cpu, wss) in enumerate(zip(part.cpu, part.wss_mb)):
            k = part.first + i
            self.out.writerow([
                repr(float(k * self.step)), part.name, repr(booked),
                part.vcpus, repr(round(cpu, 4)),
                repr(min(round(wss, 3), booked)),
                part.host if i == 0 else ''])
            self.booked[k] += booked
            self.vcpus[k] += part.vcpus
        last = part.first + len(part.cpu) - 1
        self.first = part.first if self.first is None else min(
            self.first, part.first)
        self.last = last if self.last is None else max(self.last, last)
        self.rows += len(part.cpu)
        self.vms += 1
        if part.host:
            self.hosts.setdefault(part.host, None)

    @property
    def steps(self):
        """Steps from the trace's first to its last."""
        return 0 if self.first is None else self.last - self.first + 1

    def write_hosts(self, stream, cpus, memory_mb):
        """Write a hosts CSV: each host the trace names, then, for a trace
        naming none, as many ``host-NNNN`` as hold every VM's booked memory
        and vCPUs at the busiest step; all ``cpus`` cores and ``memory_mb``
        MiB. Returns the number of hosts."""
        names = list(self.hosts)
        if not names:
            need = max([math.ceil(total / memory_mb - 1e-9)
                        for total in self.booked.values()]
                       + [math.ceil(total / cpus - 1e-9)
                          for total in self.vcpus.values()] + [1])
            names = ['host-%04d' % i for i in range(need)]
        out = csv.writer(stream)
        out.writerow(sim_trace.HOSTS_COLUMNS)
        for name in names:
            out.writerow([name, repr(float(cpus)), repr(float(memory_mb))])
        return len(names)
