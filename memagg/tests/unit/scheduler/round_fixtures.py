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

"""Hand-made hosts and VMs, and the algorithm sets, of the round tests.

Most cases use threshold detectors so that each decision can be checked by
hand.
"""
import pytest

from memagg.conf import CONF
from memagg.drivers.consolidation import base
from memagg.scheduler import consolidation as cons
from memagg.scheduler import plans


# Underloaded below 0.2 in both dimensions; overloaded above 0.8 cpu or
# 0.95 memory; packing up to 0.8 cpu and 0.95 memory, by the latest
# samples: no headroom under the detectors (hysteresis is tested on its
# own, with HYSTERESIS).
SIMPLE = {
    'underload_cpu': 'threshold', 'underload_cpu_params': {'threshold': 0.2},
    'underload_mem': 'threshold', 'underload_mem_params': {'threshold': 0.2},
    'overload_cpu': 'threshold', 'overload_cpu_params': {'threshold': 0.8},
    'overload_mem': 'threshold', 'overload_mem_params': {},
    'vm_selection': 'minimum_migration_time_max_cpu',
    'vm_selection_params': {},
    'fill_headroom_cpu': 0, 'fill_headroom_mem': 0, 'fill_window': 1,
}


@pytest.fixture
def algorithms(conf):
    return cons.load_algorithms(CONF.consolidation, SIMPLE)


def vm(uuid, cpu, wss, booked=None):
    return base.VmState(uuid=uuid, cpu_history=[cpu, cpu], wss_maxavg_mb=wss,
                        booked_mb=booked or wss * 2)


def host(name, vms, cpus=10.0, mem=1000.0, active=True, extra_cpu=0.0):
    """A host whose histories are what its VMs use (plus ``extra_cpu``)."""
    cpu = (sum(v.cpu_history[-1] for v in vms) + extra_cpu) / cpus
    used = sum(v.wss_maxavg_mb for v in vms) / mem
    return base.HostState(name=name, cpu_total=cpus, mem_usable_mb=mem,
                          cpu_history=[cpu, cpu], mem_history=[used, used],
                          vms=list(vms), active=active)


def migrations(plan):
    return [(a.instance_uuid, a.source_host, a.dest_host, a.reason)
            for a in plan.actions if a.action_type == plans.MIGRATE]


# SIMPLE with hysteresis: hosts are filled, and relieved, to 0.1 under
# what the detectors accept (0.7 cpu, 0.85 memory), counting cpu at its
# peak over the last 4 samples.
HYSTERESIS = dict(SIMPLE, fill_headroom_cpu=0.1, fill_headroom_mem=0.1,
                  fill_window=4)
