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

"""Benchmark: best fit decreasing placement of 200,000 VMs onto 10,000 hosts.

Runs, in one process and on the same synthetic input, memagg's placement
plug-in (memagg.drivers.consolidation.placement.BestFitDecreasing) and
``reference_bfd`` below: a plain, straightforward re-implementation of
OpenStack Neat's best fit decreasing, written for this benchmark from the
published method as the reference. For every VM it scans the hosts in their
order until one fits (O(VMs x hosts)) and, when none does, powers on the
next inactive host in order and scans again. Both use WSS max-average as
the VM's memory and the same thresholds (cpu 0.8, ram 0.95).

Input (seeded): 10,000 hosts of 24,000/36,000/48,000 MHz and 128/192/256
GiB, 30 % of them on with a background load and resident VMs; 200,000 VMs
to place with a CPU demand of 50..1,500 MHz (two samples) and a flavour of
2..32 GiB of which 30..90 % is resident.

Prints seconds, active hosts (on before or receiving a VM; for the
reference also the hosts it powered on without using them), unplaced VMs,
whether both produced the same plan, and the speed ratio. ``--reference-vms
N`` runs the reference on the first N of the VMs (same hosts) and
extrapolates its time linearly in the VMs, a lower bound since its scan per
VM grows as hosts fill; it says so when it does.

Run: .venv/bin/python benchmarks/placement_bfd.py [--hosts 10000]
         [--vms 200000] [--reference-vms N] [--seed 1]
"""
import argparse
import random
import time

from memagg.drivers.consolidation import base
from memagg.drivers.consolidation import placement

CPU_THRESHOLD = 0.8
RAM_THRESHOLD = 0.95
LAST_N = 2


def synthetic(n_hosts, n_vms, seed):
    """(hosts as HostStates, VMs to place as VmStates)."""
    rng = random.Random(seed)
    hosts = []
    for i in range(n_hosts):
        cpu_total = rng.choice([24000.0, 36000.0, 48000.0])
        mem = rng.choice([128.0, 192.0, 256.0]) * 1024
        active = rng.random() < 0.3
        vms = []
        util = 0.0
        if active:
            util = rng.uniform(0.05, 0.5)
            vms = [base.VmState('h%d-v%d' % (i, j), [0.0],
                                rng.uniform(1024, 8192), 8192.0)
                   for j in range(rng.randint(1, 8))]
        hosts.append(base.HostState(
            name='host-%05d' % i, cpu_total=cpu_total, mem_usable_mb=mem,
            cpu_history=[util] if active else [], mem_history=[],
            vms=vms, active=active))
    vms = []
    for k in range(n_vms):
        booked = rng.choice([2.0, 4.0, 8.0, 16.0, 32.0]) * 1024
        vms.append(base.VmState(
            uuid='vm-%06d' % k,
            cpu_history=[rng.uniform(50, 1500), rng.uniform(50, 1500)],
            wss_maxavg_mb=booked * rng.uniform(0.3, 0.9),
            booked_mb=booked))
    return hosts, vms


def reference_inputs(hosts, vms):
    """Neat's inputs: available cpu and ram of active hosts, capacity of
    inactive ones, and per-VM cpu histories and ram."""
    hosts_cpu, hosts_ram, inactive_cpu, inactive_ram = {}, {}, {}, {}
    for h in hosts:
        if h.active:
            hosts_cpu[h.name] = (CPU_THRESHOLD * h.cpu_total
                                 - h.cpu_history[-1] * h.cpu_total)
            hosts_ram[h.name] = (RAM_THRESHOLD * h.mem_usable_mb
                                 - sum(v.wss_maxavg_mb for v in h.vms))
        else:
            inactive_cpu[h.name] = CPU_THRESHOLD * h.cpu_total
            inactive_ram[h.name] = RAM_THRESHOLD * h.mem_usable_mb
    vms_cpu = {v.uuid: v.cpu_history for v in vms}
    vms_ram = {v.uuid: v.wss_maxavg_mb for v in vms}
    return hosts_cpu, hosts_ram, inactive_cpu, inactive_ram, vms_cpu, vms_ram


def reference_bfd(hosts_cpu, hosts_ram, inactive_cpu, inactive_ram,
                  vms_cpu, vms_ram):
    """The reference: Neat's best fit decreasing, scanning every host.

    Returns (mapping vm -> host, hosts powered on). Unlike Neat it keeps the
    partial mapping when a VM cannot be placed, so both runs can be
    compared.
    """
    hosts_cpu, hosts_ram = dict(hosts_cpu), dict(hosts_ram)
    order = sorted((hosts_cpu[h], hosts_ram[h], h) for h in hosts_cpu)
    off = sorted((inactive_cpu[h], inactive_ram[h], h) for h in inactive_cpu)
    vms = sorted(((sum(cpu[-LAST_N:]) / len(cpu[-LAST_N:]), vms_ram[uuid],
                   uuid) for uuid, cpu in vms_cpu.items()), reverse=True)
    mapping, powered_on = {}, []
    for cpu, ram, uuid in vms:
        while True:
            chosen = None
            for _, _, h in order:
                if hosts_cpu[h] >= cpu and hosts_ram[h] >= ram:
                    chosen = h
                    break
            if chosen is not None:
                mapping[uuid] = chosen
                hosts_cpu[chosen] -= cpu
                hosts_ram[chosen] -= ram
                break
            if not off:
                break
            woken = off.pop(0)
            powered_on.append(woken[2])
            hosts_cpu[woken[2]], hosts_ram[woken[2]] = woken[0], woken[1]
            order = sorted(order + [woken])
    return mapping, powered_on


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--hosts', type=int, default=10000)
    parser.add_argument('--vms', type=int, default=200000)
    parser.add_argument('--reference-vms', type=int, default=None,
                        help='run the reference on the first N VMs only '
                             'and extrapolate its time (default: all)')
    parser.add_argument('--seed', type=int, default=1)
    args = parser.parse_args()

    hosts, vms = synthetic(args.hosts, args.vms, args.seed)
    initially_on = {h.name for h in hosts if h.active}
    print('input: %d hosts (%d on), %d VMs to place'
          % (len(hosts), len(initially_on), len(vms)))

    plugin = placement.BestFitDecreasing({'cpu_threshold': CPU_THRESHOLD,
                                          'ram_threshold': RAM_THRESHOLD,
                                          'last_n_vm_cpu': LAST_N})
    start = time.perf_counter()
    result = plugin.place(hosts, vms)
    fast_s = time.perf_counter() - start
    fast_active = initially_on | set(result.placements.values())
    print('memagg best_fit_decreasing: %.2f s, %d active hosts, %d woken, '
          '%d unplaced' % (fast_s, len(fast_active), len(result.woken),
                           len(result.unplaced)))

    n_ref = args.reference_vms or len(vms)
    ref_vms = vms[:n_ref]
    inputs = reference_inputs(hosts, ref_vms)
    start = time.perf_counter()
    mapping, powered_on = reference_bfd(*inputs)
    ref_s = time.perf_counter() - start
    ref_active = initially_on | set(mapping.values())
    print('reference (Neat BFD, full scan) on %d VMs: %.2f s, %d active '
          'hosts (%d powered on in all), %d unplaced'
          % (n_ref, ref_s, len(ref_active), len(initially_on | set(
              powered_on)), n_ref - len(mapping)))

    if n_ref == len(vms):
        print('same plan: %s; active hosts memagg %d vs reference %d'
              % (mapping == result.placements, len(fast_active),
                 len(ref_active)))
        print('ratio: %.1fx faster' % (ref_s / fast_s))
    else:
        estimate = ref_s * len(vms) / n_ref
        print('reference on all %d VMs extrapolated linearly from %d: '
              '>= %.1f s (a lower bound: its scan grows as hosts fill)'
              % (len(vms), n_ref, estimate))
        print('ratio: >= %.1fx faster (extrapolated)' % (estimate / fast_s))


if __name__ == '__main__':
    main()
