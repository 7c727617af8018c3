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

"""Small traces in the three public formats memagg-sim import reads,
written by the tests themselves (no real trace data): the shape of each
format's files with made-up values."""
import csv
import json
import pathlib

from memagg.sim import trace_import

BITBRAINS_HEADER = (
    'Timestamp [ms];\tCPU cores;\tCPU capacity provisioned [MHZ];\t'
    'CPU usage [MHZ];\tCPU usage [%];\tMemory capacity provisioned [KB];\t'
    'Memory usage [KB];\tDisk read throughput [KB/s];\t'
    'Disk write throughput [KB/s];\tNetwork received throughput [KB/s];\t'
    'Network transmitted throughput [KB/s]')
#: A Unix time in 2013, as the Bitbrains files hold (seconds).
T0 = 1372636800


def bitbrains_row(time, cores=2, capacity=5000.0, usage=1250.0,
                  memory_kb=4194304.0, used_kb=1048576.0):
    return ';\t'.join(str(v) for v in (
        time, cores, capacity, usage, round(100 * usage / capacity, 3),
        memory_kb, used_kb, 0.0, 1.5, 0.25, 0.125))


def write_bitbrains(directory, vms, header=BITBRAINS_HEADER):
    """``vms``: {relative path (e.g. '1.csv', '2013-7/3.csv'): [row
    text]}; returns the directory."""
    root = pathlib.Path(directory)
    for name, rows in vms.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text('\n'.join([header] + list(rows)) + '\n')
    return root


def alibaba_meta_row(container, machine='m_1', time=0, cpu_request=400,
                     mem_size=3.125, status='started'):
    return ','.join(str(v) for v in (
        container, machine, time, 'app_1', status, cpu_request,
        cpu_request * 2, mem_size))


def alibaba_usage_row(container, time, cpu=50, mem=40, machine='m_1'):
    return ','.join(str(v) for v in (
        container, machine, time, cpu, mem, 1.5, 2.0, 3, 0.1, 0.2, 5))


def write_alibaba(directory, meta, usage):
    root = pathlib.Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    (root / 'container_meta.csv').write_text('\n'.join(meta) + '\n')
    (root / 'container_usage.csv').write_text('\n'.join(usage) + '\n')
    return root


def google_usage_row(collection, index, start_s, cpus=0.05, memory=0.02,
                     peak=None, assigned=0.04, machine=7,
                     collection_type=0):
    row = {'start_time': str(int(start_s * 1e6)),
           'end_time': str(int((start_s + 300) * 1e6)),
           'collection_id': str(collection), 'instance_index': index,
           'machine_id': str(machine), 'alloc_collection_id': '0',
           'alloc_instance_index': -1, 'collection_type': collection_type,
           'average_usage': {'cpus': cpus, 'memory': memory},
           'assigned_memory': assigned, 'page_cache_memory': 0.001,
           'cycles_per_instruction': 1.2, 'sample_rate': 1.0,
           'cpu_usage_distribution': [cpus] * 11}
    if peak is not None:
        row['maximum_usage'] = {'cpus': cpus * 2, 'memory': peak}
    return json.dumps(row)


def google_event_row(collection, index, cpus=0.125, memory=0.0625,
                     time_s=0):
    return json.dumps({
        'time': str(int(time_s * 1e6)), 'type': 0,
        'collection_id': str(collection), 'instance_index': index,
        'scheduling_class': 1, 'collection_type': 0, 'priority': 200,
        'machine_id': '0',
        'resource_request': {'cpus': cpus, 'memory': memory}})


def write_google(directory, usage, events=()):
    root = pathlib.Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    (root / 'instance_usage-000000000000.json').write_text(
        '\n'.join(usage) + '\n')
    if events:
        (root / 'instance_events-000000000000.json').write_text(
            '\n'.join(events) + '\n')
    return root


def fleet(vms, steps, seed):
    """A made-up fleet to pin memagg-sim's figures on, per VM: its cores,
    booked GiB, and per 300 s step the share of its cpu it uses (a daily
    cycle at its own hour, with bursts of 1 to 3 hours) and of its memory
    (moving with the day)."""
    import numpy as np
    rng = np.random.default_rng(seed)
    cores = rng.choice([1, 2, 4, 8], vms)
    booked_gib = rng.choice([8, 16, 32, 64], vms)
    hours = np.arange(steps) * 300 / 3600.0
    phase = rng.uniform(0, 24, (1, vms))
    level = rng.uniform(0.02, 0.15, (1, vms))
    cpu = level * (1 + 0.6 * np.cos(2 * np.pi * (hours[:, None] - phase)
                                    / 24))
    for vm in range(vms):
        for start in rng.choice(steps, 2, replace=False):
            burst = rng.uniform(0.2, 0.5)
            cpu[start:start + rng.integers(12, 37), vm] += burst
    used = rng.uniform(0.2, 0.5, (1, vms)) * (
        1 + 0.3 * np.sin(2 * np.pi * (hours[:, None] - phase) / 24))
    return (cores.tolist(), booked_gib.tolist(),
            np.clip(cpu, 0, 1).round(4).tolist(),
            np.clip(used, 0.05, 1).round(4).tolist())


def write_fleet(root, fmt, vms, steps, seed, machine_gib=128,
                machine_cpus=32):
    """fleet(vms, steps, seed) written in format ``fmt`` under ``root``;
    the directory memagg-sim import reads. Samples are 300 s apart from
    T0 (Bitbrains) or 0 (the others' clocks)."""
    cores, booked, cpu, used = fleet(vms, steps, seed)
    root = pathlib.Path(root)
    if fmt == 'bitbrains':
        return write_bitbrains(root, {'%d.csv' % vm: [
            bitbrains_row(T0 + 300 * t, cores[vm], cores[vm] * 2600.0,
                          round(cpu[t][vm] * cores[vm] * 2600.0, 3),
                          booked[vm] * 1048576.0,
                          round(used[t][vm] * booked[vm] * 1048576.0))
            for t in range(steps)] for vm in range(vms)})
    if fmt == 'alibaba2018':
        meta = [alibaba_meta_row('c_%d' % vm, machine='m_%d' % (vm % 4),
                                 cpu_request=100 * cores[vm],
                                 mem_size=round(100.0 * booked[vm]
                                                / machine_gib, 4))
                for vm in range(vms)]
        usage = [alibaba_usage_row('c_%d' % vm, 1 + 300 * t,
                                   cpu=round(100 * cpu[t][vm], 2),
                                   mem=round(100 * used[t][vm], 2),
                                   machine='m_%d' % (vm % 4))
                 for t in range(steps) for vm in range(vms)]
        return write_alibaba(root, meta, usage)
    usage = [google_usage_row(vm, 0, 600 + 300 * t,
                              cpus=round(cpu[t][vm] * cores[vm]
                                         / machine_cpus, 6),
                              memory=round(used[t][vm] * booked[vm]
                                           / machine_gib, 6),
                              assigned=round(booked[vm] / machine_gib, 6),
                              machine=vm % 4)
             for t in range(steps) for vm in range(vms)]
    events = [google_event_row(vm, 0, cpus=cores[vm] / machine_cpus,
                               memory=booked[vm] / machine_gib)
              for vm in range(vms)]
    return write_google(root, usage, events)


def run(capsys, *argv):
    """memagg-sim import with ``argv``, in this process: (exit status,
    stdout, stderr)."""
    status = trace_import.main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def rows(path):
    """The rows of CSV file ``path``, as dicts."""
    with open(path, newline='') as stream:
        return list(csv.DictReader(stream))
