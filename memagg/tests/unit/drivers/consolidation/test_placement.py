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

"""Best fit decreasing placement against hand-computed cases and a
brute-force scan of the same rule (ALGORITHMS.md §3.4)."""
import random

import pytest

from memagg.common import exceptions
from memagg.drivers.consolidation import base
from memagg.drivers.consolidation import placement


def vm(uuid, cpu, wss, booked=None, remote=0.0):
    return base.VmState(uuid=uuid, cpu_history=cpu, wss_maxavg_mb=wss,
                        booked_mb=wss if booked is None else booked,
                        remote_mb=remote)


def host(name, cpu_total, mem, cpu_util=None, vms=(), active=True):
    return base.HostState(name=name, cpu_total=cpu_total, mem_usable_mb=mem,
                          cpu_history=[] if cpu_util is None else [cpu_util],
                          mem_history=[], vms=list(vms), active=active)


def bfd(**params):
    return placement.BestFitDecreasing(params)


def test_defaults():
    assert bfd().params == {'cpu_threshold': 0.8, 'ram_threshold': 0.95,
                            'last_n_vm_cpu': 2, 'memory_basis': 'wss'}


def test_memory_dimension_steers_the_fit():
    # A: cpu 0.8*1000 - 0.5*1000 = 300 free, mem 0.95*10000 - 4000 = 5500
    # B: cpu 800 - 200 = 600 free,            mem 9500 - 1000 = 8500
    # Order by free (cpu, mem) ascending: A, B.
    hosts = [host('B', 1000, 10000, 0.2, [vm('b0', [200.0], 1000.0)]),
             host('A', 1000, 10000, 0.5, [vm('a0', [500.0], 4000.0)])]
    vms = [vm('v1', [100.0, 300.0], 2000.0),   # demand (100+300)/2 = 200
           vm('v2', [250.0], 6000.0),           # demand 250
           vm('v3', [0.0, 50.0, 50.0], 1000.0)]  # demand (50+50)/2 = 50
    result = bfd().place(hosts, vms)
    # v2 (250, 6000): A has the cpu but 5500 < 6000 MiB -> B (350, 2500 left)
    # v1 (200, 2000): A fits -> A (100, 3500 left)
    # v3 (50, 1000): A fits -> A
    assert result.placements == {'v2': 'B', 'v1': 'A', 'v3': 'A'}
    assert result.woken == [] and result.unplaced == {}


def test_memory_basis_booked_packs_by_flavour_ram_and_wakes():
    hosts = [host('A', 1000, 10000, 0.0),
             host('C', 1000, 10000, active=False)]
    vms = [vm('x', [10.0], 2000.0, booked=8000.0),
           vm('y', [20.0], 2000.0, booked=8000.0)]
    # wss: 2000 + 2000 <= 9500 on A.
    assert bfd().place(hosts, vms).placements == {'x': 'A', 'y': 'A'}
    # booked: y (cpu 20) first takes 8000 of A's 9500; x needs 8000 more
    # than the 1500 left, so inactive C is woken.
    result = bfd(memory_basis='booked').place(hosts, vms)
    assert result.placements == {'y': 'A', 'x': 'C'}
    assert result.woken == ['C']


def test_wakes_smallest_inactive_host_that_fits():
    hosts = [host('full', 1000, 10000, 0.8),   # 0 cpu free
             host('tiny', 100, 10000, active=False),   # 80 cpu free
             host('mid', 1000, 10000, active=False),   # 800
             host('big', 2000, 10000, active=False)]   # 1600
    result = bfd().place(hosts, [vm('v', [500.0], 100.0),
                                 vm('w', [60.0], 100.0)])
    # v (500) wakes 'mid', the smallest that can take it, not 'tiny';
    # w (60) then fits mid (300 left), an active host, before waking tiny.
    assert result.placements == {'v': 'mid', 'w': 'mid'}
    assert result.woken == ['mid']


def test_partial_plan_with_reasons():
    hosts = [host('A', 1000, 10000, 0.0), host('B', 1000, 4000, 0.0)]
    vms = [vm('cpu-hog', [900.0], 10.0),       # 900 > 800 anywhere
           vm('mem-hog', [1.0], 20000.0),      # 20000 > 9500 anywhere
           vm('no-data', [], 10.0),
           vm('ok', [100.0], 5000.0)]
    result = bfd().place(hosts, vms)
    assert result.placements == {'ok': 'A'}
    assert set(result.unplaced) == {'cpu-hog', 'mem-hog', 'no-data'}
    assert result.unplaced['cpu-hog'] == (
        'cpu: no host has 900.0 cpu free for it (the most free is 800.0)')
    # By decreasing cpu: cpu-hog (900), ok (100) to A, mem-hog (1) last,
    # when A has 0.95 * 10000 - 5000 = 4500 MiB and B 0.95 * 4000 = 3800.
    assert result.unplaced['mem-hog'] == (
        'memory: no host with 1.0 cpu free has 20000.0 MiB (wss) free for '
        'it (the most such a host has is 4500.0 MiB)')
    assert 'no cpu history' in result.unplaced['no-data']


def test_rooms_lower_how_far_a_host_is_filled():
    # A would take v under 0.8 of its cpu (200 + 500 <= 800) and 0.95 of
    # its memory; a room of 0.6 cpu leaves it 400, so v goes to B; a room
    # of 0.5 memory leaves C 500 MiB, too little for w.
    hosts = [host('A', 1000, 10000, 0.2), host('B', 1000, 10000, 0.0),
             host('C', 1000, 1000, 0.0, active=False)]
    vms = [vm('v', [500.0], 100.0)]
    assert bfd().place(hosts, vms).placements == {'v': 'A'}
    rooms = {'A': base.Room(cpu=0.6), 'C': base.Room(mem=0.5)}
    assert bfd().place(hosts, vms, rooms).placements == {'v': 'B'}

    result = bfd().place(hosts[2:], [vm('w', [10.0], 600.0)], rooms)
    assert result.woken == []
    assert result.unplaced['w'].startswith('memory:')


def test_rooms_cap_the_vms_a_host_receives():
    # A has room for all three but takes two; the third goes to B. With B
    # taking none, it stays, and the reason says why hosts were left out.
    hosts = [host('A', 1000, 10000, 0.0), host('B', 1000, 10000, 0.5)]
    vms = [vm('v%d' % i, [100.0 - i], 100.0) for i in range(3)]
    rooms = {'A': base.Room(moves=2)}
    result = bfd().place(hosts, vms, rooms)
    assert result.placements == {'v0': 'B', 'v1': 'B', 'v2': 'B'}
    rooms = {'A': base.Room(moves=2), 'B': base.Room(moves=0)}
    result = bfd().place(hosts, vms, rooms)
    assert result.placements == {'v0': 'A', 'v1': 'A'}
    assert result.unplaced['v2'].endswith(
        '(2 hosts may receive no more VMs this round)')


def test_cpu_and_memory_never_together():
    # A has the cpu (800 >= 500) but 0.95 * 1000 = 950 MiB; B has 10000 MiB
    # but 0.8 * 100 = 80 cpu: the memory of hosts with the cpu is short.
    hosts = [host('A', 1000, 1000, 0.0), host('B', 100, 10000, 0.0)]
    result = bfd().place(hosts, [vm('v', [500.0], 5000.0)])
    assert result.unplaced['v'].startswith('memory:')
    assert 'the most such a host has is 950.0 MiB' in result.unplaced['v']


def test_reason_leaves_out_the_vms_own_host():
    # x may not go back to A, which would have the most memory free once
    # it left (0.95 * 20000 = 19000); B has 0.95 * 2000 = 1900 MiB.
    x = vm('x', [10.0], 5000.0)
    hosts = [host('A', 1000, 20000, 0.01, [x]), host('B', 1000, 2000, 0.0)]
    result = bfd().place(hosts, [x])
    assert result.unplaced['x'].endswith(
        '(the most such a host has is 1900.0 MiB)')


def test_moving_vm_leaves_its_host_and_frees_it():
    # A: used 0.9*1000 = 900 including x's latest 400 -> 500 used,
    # free cpu 800 - 500 = 300; x's memory no longer counts on A.
    x = vm('x', [100.0, 400.0], 3000.0)
    hosts = [host('A', 1000, 4000, 0.9, [x, vm('a1', [500.0], 500.0)]),
             host('B', 1000, 10000, 0.1)]
    result = bfd().place(hosts, [x, vm('y', [300.0], 3000.0)])
    # x (demand 250) may not go back to A, its own host -> B.
    # y (300, 3000): A has 300 cpu and 0.95*4000 - 500 = 3300 MiB -> A.
    assert result.placements == {'x': 'B', 'y': 'A'}


def reference(hosts, vms, cpu_threshold=0.8, ram_threshold=0.95, last_n=2):
    """The same rule by scanning every host for every VM."""
    moving = {v.uuid for v in vms}
    free = {}
    for h in hosts:
        cpu = h.cpu_history[-1] * h.cpu_total if h.active else 0.0
        mem = 0.0
        for v in h.vms:
            if v.uuid in moving:
                cpu -= v.cpu_history[-1]
            else:
                mem += v.wss_maxavg_mb
        free[h.name] = [cpu_threshold * h.cpu_total - max(cpu, 0.0),
                        ram_threshold * h.mem_usable_mb - mem]
    order = sorted(free, key=lambda n: (tuple(free[n]), n))
    on = {h.name for h in hosts if h.active}
    source = {v.uuid: h.name for h in hosts for v in h.vms}
    demands = sorted(((sum(v.cpu_history[-last_n:])
                       / len(v.cpu_history[-last_n:]), v.wss_maxavg_mb,
                       v.uuid) for v in vms), reverse=True)
    placements, woken = {}, []
    for cpu, mem, uuid in demands:
        for want_on in (True, False):
            found = None
            for name in order:
                if ((name in on) == want_on and name != source.get(uuid)
                        and free[name][0] >= cpu and free[name][1] >= mem):
                    found = name
                    break
            if found:
                break
        if found is None:
            continue
        if found not in on:
            on.add(found)
            woken.append(found)
        free[found][0] -= cpu
        free[found][1] -= mem
        placements[uuid] = found
    return placements, woken


@pytest.mark.parametrize('seed', range(16))
def test_same_plan_as_a_full_scan(seed):
    rng = random.Random(seed)
    # Odd seeds draw from a few round values so that demands tie and free
    # capacity lands exactly on a demand.
    if seed % 2:
        def draw(low, high):
            return float(rng.choice(range(int(low), int(high) + 1,
                                          int(high - low) // 4 or 1)))
    else:
        draw = rng.uniform
    hosts = []
    for i in range(rng.randint(1, 40)):
        total = rng.choice([1000.0, 2000.0, 4000.0])
        on = rng.random() < 0.6
        # A powered-off host runs no VM.
        vms = [vm('h%d-v%d' % (i, j), [draw(0, 300)], draw(100, 4000))
               for j in range(rng.randint(0, 4) if on else 0)]
        hosts.append(host('h%02d' % i, total, rng.choice([8000.0, 16000.0]),
                          rng.uniform(0, 1), vms, active=on))
    leaving = [v for h in hosts if h.active for v in h.vms
               if rng.random() < 0.3]
    new = [vm('n%d' % k, [draw(0, 400) for _ in range(3)], draw(100, 6000))
           for k in range(rng.randint(0, 60))]
    result = bfd().place(hosts, leaving + new)
    placements, woken = reference(hosts, leaving + new)
    assert result.placements == placements
    assert result.woken == woken
    assert set(result.unplaced) == {v.uuid for v in leaving + new} - set(
        placements)


@pytest.mark.parametrize('params,key', [({'cpu_threshold': 1.5},
                                         'cpu_threshold'),
                                        ({'memory_basis': 'rss'},
                                         'memory_basis'),
                                        ({'last_n_vm_cpu': 0},
                                         'last_n_vm_cpu'),
                                        ({'cpu': 0.8}, 'cpu')])
def test_bad_parameters_name_the_key(params, key):
    with pytest.raises(exceptions.InvalidParameter) as err:
        placement.BestFitDecreasing(params)
    assert (err.value.kwargs['field']
            == 'placement.best_fit_decreasing.' + key)


def test_loaded_through_entry_point():
    plugin = base.load('placement', 'best_fit_decreasing',
                       {'memory_basis': 'booked'})
    assert isinstance(plugin, placement.BestFitDecreasing)
    assert plugin.params['memory_basis'] == 'booked'
