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

"""``memagg-manage trace export``: the stored history as a memagg-sim trace.

It reads the WSS samples memagg-compute reported between --since
(included) and --until (excluded), with their instances' booked memory and
vCPUs, and writes DIR/trace.csv and DIR/hosts.csv in memagg-sim's format
(memagg.sim.trace), so that ``memagg-sim --trace DIR/trace.csv --hosts
DIR/hosts.csv --config-file memagg.conf`` replays that window.

The grid: step k holds the samples taken in [since + k * step, since +
(k + 1) * step); its time in the trace is k * step seconds. A VM's step
takes the largest WSS of its samples there (the max-average is fed an
upper bound, never less than was measured) and the mean of their CPU
use (cores; 0 when none reported it). Warming samples (kept out of
WSS^maxavg by memagg-compute) give no WSS: a step that has only those
counts as missing. memagg-sim needs a row at every step of a VM's life: a
gap of up to ``max_gap`` missing steps repeats the step before it; a
longer one (the VM was shut off, its host was down) ends the VM, and what
follows is a VM of its own, named ``<uuid>~2``, ``~3``... A WSS above the
booked memory is cut to it, a CPU use above the vCPUs to them (the trace
allows no more). A VM's host is its host at each step (memagg-sim reads
the first).

hosts.csv lists the hosts that reported since --since, and those a plan
put on standby: their vCPUs and their memory less the reserved memory.
"""
import csv
import dataclasses
import itertools
import os
import statistics

from oslo_utils import timeutils

from memagg.common import cli
from memagg.db import hosts as db_hosts
from memagg.db import instances as db_instances
from memagg.db import samples as db_samples

TRACE = 'trace.csv'
HOSTS = 'hosts.csv'
TRACE_COLUMNS = ('time', 'vm', 'booked_mb', 'vcpus', 'cpu', 'wss_mb', 'host')
HOSTS_COLUMNS = ('host', 'cpus', 'memory_mb')


class EmptyWindow(Exception):
    """No WSS sample lies in the window: nothing to export."""


@dataclasses.dataclass
class Summary:
    """What an export wrote; ``notes`` say what it left out or changed."""

    rows: int = 0
    vms: int = 0
    steps: int = 0
    hosts: int = 0
    notes: list = dataclasses.field(default_factory=list)


def parse_time(flag, text):
    """``text`` (ISO 8601; UTC when it names no zone) as a naive UTC
    datetime, or UsageError naming ``flag`` and the fix."""
    try:
        moment = timeutils.parse_isotime(text)
    except ValueError as exc:
        raise cli.UsageError(
            'argument %s: %r is not a time (%s); give an ISO 8601 time such '
            'as 2026-12-01T00:00:00Z (UTC when no zone is given)'
            % (flag, text, exc))
    return timeutils.normalize_time(moment)


def check_window(since, until, step_s, max_gap):
    """UsageError naming the argument that is wrong, and the fix."""
    if since >= until:
        raise cli.UsageError(
            'argument --until: %s is not after --since %s; give an --until '
            'later than --since' % (until.isoformat(), since.isoformat()))
    if step_s < 1:
        raise cli.UsageError('argument --step: %d is less than 1; give '
                             'the seconds of a step, 1 or more' % step_s)
    if max_gap < 0:
        raise cli.UsageError('argument --max-gap: %d is negative; give 0 '
                             'or more steps' % max_gap)


def steps_of(samples, since, step_s):
    """{step: (cpu, wss_mb, host)} of one VM's ``samples`` (rows of
    db.samples.wss_history), as the module's docstring says; steps with
    no WSS are left out."""
    bins = {}
    for row in samples:
        k = int((row.sampled_at - since).total_seconds() // step_s)
        wss, cpu, _host = bins.setdefault(k, ([], [], None))
        if not row.warming:
            wss.append(row.wss_mb)
        if row.cpu_util is not None:
            cpu.append(row.cpu_util)
        bins[k] = (wss, cpu, row.host)
    return {k: (statistics.fmean(cpu) if cpu else 0.0, max(wss), host)
            for k, (wss, cpu, host) in bins.items() if wss}


def pieces(steps, max_gap):
    """The runs of ``steps`` (steps_of) as lists of (step, cpu, wss_mb,
    host) with every step in between: a gap of up to ``max_gap`` missing
    steps repeats the step before it, a longer one starts a new run."""
    run, last = [], None
    for k in sorted(steps):
        if run and k - last - 1 > max_gap:
            yield run
            run = []
        elif run:
            run.extend((filled,) + run[-1][1:] for filled in range(last + 1,
                                                                   k))
        run.append((k,) + steps[k])
        last = k
    if run:
        yield run


def _number(value):
    """A CSV field: whole numbers without a decimal point."""
    return '%d' % value if float(value).is_integer() else '%.6g' % value


def export(context, since, until, step_s, max_gap, out_dir):
    """Write the window's trace and hosts to ``out_dir`` (made if needed);
    return a Summary. EmptyWindow when no WSS sample lies in it."""
    os.makedirs(out_dir, exist_ok=True)
    summary = Summary()
    hosts = {}
    for row in db_hosts.hosts_for_round(context, since):
        memory_mb = row.memory_mb - row.reserved_mb
        if row.vcpus < 1 or memory_mb < 1:
            summary.notes.append(
                'host %s left out: it reported %d vCPUs and %d MiB for its '
                'VMs' % (row.name, row.vcpus, memory_mb))
        else:
            hosts[row.name] = (row.vcpus, memory_mb)
    sizes = db_instances.instance_sizes(context)
    times = set()
    with open(os.path.join(out_dir, TRACE), 'w', newline='') as trace:
        writer = csv.writer(trace, lineterminator='\n')
        writer.writerow(TRACE_COLUMNS)
        history = db_samples.wss_history(context, since, until)
        for uuid, samples in itertools.groupby(
                history, key=lambda row: row.instance_uuid):
            booked_mb, vcpus = sizes.get(uuid, (0, 0))
            if booked_mb < 1:
                summary.notes.append('VM %s left out: memagg knows no '
                                     'booked memory of it' % uuid)
                continue
            if vcpus < 1:
                summary.notes.append('VM %s: memagg knows no vCPUs of it; '
                                     'counted as 1' % uuid)
                vcpus = 1
            steps = steps_of(samples, since, step_s)
            for number, run in enumerate(pieces(steps, max_gap), 1):
                name = uuid if number == 1 else '%s~%d' % (uuid, number)
                summary.vms += 1
                for k, cpu, wss_mb, host in run:
                    times.add(k)
                    writer.writerow((
                        _number(k * step_s), name, booked_mb, vcpus,
                        _number(min(max(cpu, 0.0), vcpus)),
                        min(max(wss_mb, 0), booked_mb),
                        host if host in hosts else ''))
                    summary.rows += 1
    if not summary.rows:
        os.remove(os.path.join(out_dir, TRACE))
        raise EmptyWindow('no WSS sample (warming ones aside) was taken from '
                          '%s to %s: nothing to export'
                          % (since.isoformat(), until.isoformat()))
    summary.steps = len(times)
    with open(os.path.join(out_dir, HOSTS), 'w', newline='') as out:
        writer = csv.writer(out, lineterminator='\n')
        writer.writerow(HOSTS_COLUMNS)
        for name, (cpus, memory_mb) in sorted(hosts.items()):
            writer.writerow((name, cpus, memory_mb))
    summary.hosts = len(hosts)
    return summary
