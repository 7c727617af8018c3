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

"""Alibaba cluster-trace-v2018's containers: SRC is the directory holding
``container_meta.csv`` and ``container_usage.csv`` (or ``.csv.gz``), CSV
without a header, columns in the order of the trace's schema.md:

* container_meta: container_id, machine_id, time_stamp, app_du, status,
  cpu_request, cpu_limit, mem_size;
* container_usage: container_id, machine_id, time_stamp,
  cpu_util_percent, mem_util_percent, cpi, mem_gps, mpki, net_in,
  net_out, disk_io_percent.

(trace_2018.md lists container_usage's columns in another order; schema.md
says its order is the files'.) Times are seconds from the trace's start.

Mapping: a VM is a container. booked_mb = its largest mem_size (0-100, a
share of the largest machine's memory) x --machine-memory-mb / 100;
vcpus = its largest cpu_request / 100 (100 is one core), rounded up.
Per container_usage row: cpu = cpu_util_percent / 100 x cpu_request / 100
(the percentage read as a share of the cores it requested), wss_mb =
mem_util_percent / 100 x booked_mb, host = machine_id.

Dropped rows: time_stamp 0 (the trace's mark for outside its 8 days), a
cpu or memory percentage the trace marks invalid (-1 or 101) or left
empty, containers container_meta does not size. Memory: the size of each
container (a dict over containers, not rows), and the spill buckets
(memagg.sim.importers.spill).
"""
import math

from memagg.sim import arguments
from memagg.sim.importers import base
from memagg.sim.importers import spill

META = ('container_id', 'machine_id', 'time_stamp', 'app_du', 'status',
        'cpu_request', 'cpu_limit', 'mem_size')
USAGE = ('container_id', 'machine_id', 'time_stamp', 'cpu_util_percent',
         'mem_util_percent', 'cpi', 'mem_gps', 'mpki', 'net_in', 'net_out',
         'disk_io_percent')
#: The values the trace sets a percentage to when it is invalid.
INVALID = ('-1', '101')
#: The v2018 machines' cores (machine_meta's cpu_num), for --hosts-out.
MACHINE_CPUS = 96.0


def _fields(path, line, text, columns, name):
    fields = text.rstrip('\r\n').split(',')
    if len(fields) < len(columns):
        raise base.TraceError(path, line, columns[len(fields)], 'missing: '
                              'the row has %d of the %d fields of %s (%s); '
                              'is this that file, or is it cut short?'
                              % (len(fields), len(columns), name,
                                 ', '.join(columns)))
    if len(fields) > len(columns):
        raise base.TraceError(path, line, None, 'column %d: more than the '
                              '%d fields of %s (%s); is this that file?'
                              % (len(columns) + 1, len(columns), name,
                                 ', '.join(columns)))
    return fields


class Alibaba2018(base.Importer):
    """Alibaba cluster-trace-v2018 containers."""

    summary = 'Alibaba cluster-trace-v2018 containers'
    source = 'directory of container_meta.csv and container_usage.csv'
    step_s = 300.0

    def add_arguments(self, group):
        group.add_argument(
            '--machine-memory-mb', type=arguments.POSITIVE, metavar='MIB',
            help='MiB of the trace\'s largest machine, to which mem_size '
                 'is normalized (default %g, memagg-sim\'s default host: '
                 'the trace does not say; VMs keep their share of a '
                 'host).' % arguments.DEFAULT_HOST_MEMORY_MB)
        group.add_argument(
            '--machine-cpus', type=arguments.POSITIVE, metavar='CORES',
            help='Cores of each machine --hosts-out writes (default %g, '
                 'the v2018 machines\').' % MACHINE_CPUS)

    @staticmethod
    def _memory(args):
        return args.machine_memory_mb or arguments.DEFAULT_HOST_MEMORY_MB

    def host_size(self, args):
        return (args.machine_cpus or MACHINE_CPUS, self._memory(args))

    def sizes(self, paths, args, context):
        """{container: (booked MiB, requested cores)} from container_meta:
        the largest of its rows."""
        memory = self._memory(args)
        sizes = {}
        for path in paths:
            with base.open_lines(path) as (lines, _):
                for line, text in lines:
                    if not text.strip():
                        continue
                    fields = _fields(path, line, text, META,
                                     'container_meta.csv')
                    if fields[7] in INVALID:
                        context.counts.note('container_meta rows with an '
                                            'invalid mem_size (-1 or 101)')
                        continue
                    cpu = base.number(path, line, 'cpu_request', fields[5])
                    mem = base.number(path, line, 'mem_size', fields[7],
                                      high=100)
                    old = sizes.get(fields[0], (0.0, 0.0))
                    sizes[fields[0]] = (max(old[0], mem / 100 * memory),
                                        max(old[1], cpu / 100))
        return sizes

    def vms(self, src, args, context):
        sizes = self.sizes(base.find_inputs(src, 'container_meta'), args,
                           context)
        paths = base.find_inputs(src, 'container_usage')
        buckets = spill.Spill(context.tmpdir, base.file_size(paths),
                              context.chunk_bytes)
        counts = context.counts
        for path, line, text in base.input_lines(paths, context):
            if not text.strip():
                continue
            fields = _fields(path, line, text, USAGE, 'container_usage.csv')
            time = base.number(path, line, 'time_stamp', fields[2])
            if time == 0:
                counts.drop('time_stamp 0 (outside the trace\'s 8 days)')
                continue
            if fields[3] in INVALID or fields[4] in INVALID:
                counts.drop('cpu or memory percentage marked invalid '
                            '(-1 or 101)')
                continue
            if not fields[3].strip() or not fields[4].strip():
                counts.drop('cpu or memory percentage empty')
                continue
            cpu = base.number(path, line, 'cpu_util_percent', fields[3],
                              high=100)
            mem = base.number(path, line, 'mem_util_percent', fields[4],
                              high=100)
            size = sizes.get(fields[0])
            if size is None:
                counts.drop('container not in container_meta')
                continue
            if not context.window.contains(time):
                counts.drop('outside --start/--days')
                continue
            if not context.admit(fields[0]):
                counts.drop('beyond --max-vms')
                continue
            booked, cores = size
            buckets.add(fields[0], time, cpu / 100 * cores,
                        mem / 100 * booked, booked,
                        max(1, math.ceil(cores - 1e-9)), fields[1])
        for vm, rows in buckets.groups(context.progress):
            yield vm, [base.Sample(*row) for row in rows]
