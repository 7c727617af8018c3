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

"""Google cluster-data 2019 (ClusterData2019, trace format v3:
clusterdata_trace_format_v3.proto) as newline-delimited JSON, one object
per line, as the trace is published for download and as BigQuery exports
a table (nested records as objects, int64 values as numbers or strings).
SRC is a directory holding ``instance_usage*`` files (``.json`` or
``.json.gz``) and, optionally, ``instance_events*`` files.

Mapping: a VM is an instance, ``COLLECTION_ID-INSTANCE_INDEX``. Per
instance_usage row: time = start_time / 1e6 (microseconds from the
trace's start); cpu = average_usage.cpus x --cpu-scale; wss_mb = the larger
of average_usage.memory and maximum_usage.memory x --memory-scale-mb;
host = machine_id. booked_mb = the instance's largest
resource_request.memory in instance_events x --memory-scale-mb, else its
largest assigned_memory, else its peak use; vcpus = its largest
resource_request.cpus x --cpu-scale rounded up, else its peak cpu rounded
up.

Dropped rows: instances of alloc sets (collection_type 1: a reservation
whose tasks report their own usage), rows without average_usage. Memory:
the spill buckets (memagg.sim.importers.spill), nothing per instance.
"""
import json
import math

from memagg.sim import arguments
from memagg.sim.importers import base
from memagg.sim.importers import spill

ALLOC_SET = 1
USAGE_KEYS = ('start_time', 'end_time', 'collection_id', 'instance_index')
EVENT_KEYS = ('time', 'type', 'collection_id', 'instance_index')


def _object(path, line, text, keys, table):
    try:
        row = json.loads(text)
    except ValueError as exc:
        raise base.TraceError(path, line, None, 'column %d: not JSON (%s); '
                              'a google2019 file holds one %s object per '
                              'line' % (getattr(exc, 'colno', 1),
                                        getattr(exc, 'msg', exc), table))
    if not isinstance(row, dict):
        raise base.TraceError(path, line, None, 'not a JSON object; a '
                              'google2019 file holds one %s object per line'
                              % table)
    for key in keys:
        if row.get(key) is None:
            raise base.TraceError(path, line, key, 'missing; is this an %s '
                                  'file?' % table)
    return row


def _resource(path, line, row, record, key):
    """``row[record][key]`` checked (>= 0), None when absent."""
    values = row.get(record)
    value = values.get(key) if isinstance(values, dict) else None
    if value is None:
        return None
    return base.number(path, line, '%s.%s' % (record, key), value)


class Google2019(base.Importer):
    """Google cluster-data 2019 instances (newline-delimited JSON)."""

    summary = 'Google cluster-data 2019 instance_usage (+ instance_events)'
    source = 'directory of instance_usage*.json[.gz] (+ instance_events*)'
    step_s = 300.0

    def add_arguments(self, group):
        group.add_argument(
            '--cpu-scale', type=arguments.POSITIVE, metavar='CORES',
            help='Cores of one normalized CPU unit, the largest machine\'s '
                 '(default %g, memagg-sim\'s default host: the trace does '
                 'not say).' % arguments.DEFAULT_HOSTS_CPUS)
        group.add_argument(
            '--memory-scale-mb', type=arguments.POSITIVE, metavar='MIB',
            help='MiB of one normalized memory unit, the largest '
                 'machine\'s (default %g, memagg-sim\'s default host).'
                 % arguments.DEFAULT_HOST_MEMORY_MB)
        group.add_argument(
            '--no-events', action='store_true', default=None,
            help='Do not read instance_events* (booked size from '
                 'assigned_memory and peak use).')

    @staticmethod
    def _scales(args):
        return (args.cpu_scale or arguments.DEFAULT_HOSTS_CPUS,
                args.memory_scale_mb or arguments.DEFAULT_HOST_MEMORY_MB)

    def host_size(self, args):
        return self._scales(args)

    def vms(self, src, args, context):
        cpu_scale, memory_scale = self._scales(args)
        usage = base.find_inputs(src, 'instance_usage')
        events = ([] if args.no_events
                  else base.find_inputs(src, 'instance_events',
                                        required=False))
        buckets = spill.Spill(context.tmpdir,
                              base.file_size(usage + events),
                              context.chunk_bytes)
        for path, line, text in base.input_lines(usage, context):
            if text.strip():
                self._usage(path, line, text, context, buckets,
                            cpu_scale, memory_scale)
        for path, line, text in base.input_lines(events, context):
            if not text.strip():
                continue
            row = _object(path, line, text, EVENT_KEYS, 'instance_events')
            vm = '%s-%s' % (row['collection_id'], row['instance_index'])
            cpus = _resource(path, line, row, 'resource_request', 'cpus')
            memory = _resource(path, line, row, 'resource_request', 'memory')
            if context.admitted(vm) and (cpus or memory):
                buckets.add(vm, 'e', (cpus or 0) * cpu_scale,
                            (memory or 0) * memory_scale)
        for vm, rows in buckets.groups(context.progress):
            samples = _samples(rows, context.counts)
            if samples:
                yield vm, samples

    @staticmethod
    def _usage(path, line, text, context, buckets, cpu_scale,
               memory_scale):
        row = _object(path, line, text, USAGE_KEYS, 'instance_usage')
        time = base.number(path, line, 'start_time', row['start_time'])
        base.number(path, line, 'end_time', row['end_time'])
        if row.get('collection_type') in (ALLOC_SET, str(ALLOC_SET)):
            context.counts.drop('alloc set instance (its tasks report '
                                'their own usage)')
            return
        cpu = _resource(path, line, row, 'average_usage', 'cpus')
        memory = _resource(path, line, row, 'average_usage', 'memory')
        if cpu is None or memory is None:
            context.counts.drop('no average_usage')
            return
        peak = _resource(path, line, row, 'maximum_usage', 'memory')
        assigned = row.get('assigned_memory')
        assigned = (0.0 if assigned is None else
                    base.number(path, line, 'assigned_memory', assigned))
        time /= 1e6
        vm = '%s-%s' % (row['collection_id'], row['instance_index'])
        if not context.window.contains(time):
            context.counts.drop('outside --start/--days')
            return
        if not context.admit(vm):
            context.counts.drop('beyond --max-vms')
            return
        buckets.add(vm, 'u', time, cpu * cpu_scale,
                    max(memory, peak or 0.0) * memory_scale,
                    assigned * memory_scale, str(row.get('machine_id', '')))


def _samples(rows, counts):
    """A VM's Samples from its spilled usage ('u') and event ('e') rows,
    sized as the module's docstring says."""
    usage = [row[1:] for row in rows if row[0] == 'u']
    if not usage:
        return []
    requests = [row[1:] for row in rows if row[0] == 'e']
    booked = max([memory for _, memory in requests] + [0.0])
    if not booked:
        booked = max(assigned for _, _, _, assigned, _ in usage)
    if not booked:
        counts.note('VMs booked at their peak use (no request, no '
                    'assigned_memory)')
        booked = max(wss for _, _, wss, _, _ in usage)
    vcpus = max([cpus for cpus, _ in requests] + [0.0])
    if not vcpus:
        counts.note('VMs with vcpus from their peak cpu (no request)')
        vcpus = max(cpu for _, cpu, _, _, _ in usage)
    vcpus = max(1, math.ceil(vcpus - 1e-9))
    if booked <= 0:
        counts.drop('instance with no memory at all', len(usage))
        return []
    return [base.Sample(time, cpu, wss, booked, vcpus,
                        '' if host in ('', 'None') else host)
            for time, cpu, wss, _, host in usage]
