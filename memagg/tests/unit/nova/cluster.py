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

"""Nova's own objects (HostState, RequestSpec, Flavor) and memagg-compute's
reports, as the filter's and weigher's tests need them.

Nova's scheduler modules and objects are imported into the main test
process: importing them does not monkey-patch (only nova.tests and Nova's
service entry points call nova.monkey_patch), and memagg, imported first,
has already made oslo.service's backend threading. Nova's test fakes
(nova.tests.unit.scheduler.fakes) are not used because importing nova.tests
does monkey-patch.
"""
import uuid

from nova import objects
from nova.scheduler import host_manager

from memagg.common import context
from memagg.db import reports as db_reports
from memagg.nova import filters

objects.register_all()

#: Nova's and memagg-compute's reserved_host_memory_mb in these tests.
RESERVED_MB = 512
#: Every test host's physical memory.
HOST_MB = 16384


def report(host, vms=(), memory_mb=HOST_MB, lendable_mb=0,
           reported_at=None):
    """memagg-compute's report of ``host``; ``vms`` are (booked MiB,
    WSS^maxavg MiB)."""
    db_reports.report_ingest(
        context.get_admin_context(),
        dict(name=host, memory_mb=memory_mb, reserved_mb=RESERVED_MB,
             lendable_mb=lendable_mb),
        [dict(uuid=str(uuid.uuid4()), booked_mb=booked, current_mb=booked,
              wss_maxavg_mb=wss) for booked, wss in vms], [],
        reported_at=reported_at)


def host_state(host, booked_mb=0, memory_mb=HOST_MB):
    """Nova's HostState of ``host`` as nova-compute's ComputeNode record
    makes it: ``booked_mb`` is the memory of the flavors Nova placed
    there (its used memory is that plus RESERVED_MB)."""
    state = host_manager.HostState(host, host, None)
    state.update(compute=objects.ComputeNode(
        uuid=str(uuid.uuid4()), memory_mb=memory_mb,
        free_ram_mb=memory_mb - RESERVED_MB - booked_mb, vcpus=16,
        vcpus_used=0, local_gb=100, local_gb_used=0, free_disk_gb=100,
        disk_available_least=None, numa_topology=None,
        pci_device_pools=None, host_ip='192.0.2.1', hypervisor_type='QEMU',
        hypervisor_version=8002000, hypervisor_hostname=host, cpu_info='',
        supported_hv_specs=[], stats={}, metrics=None,
        cpu_allocation_ratio=4.0, ram_allocation_ratio=1.5,
        disk_allocation_ratio=1.0, updated_at=None))
    return state


def request(memory_mb, expected_wss_mb=None, num_instances=1,
            rebuild=False):
    """Nova's RequestSpec for ``num_instances`` VMs of a flavor of
    ``memory_mb`` with, unless None, the extra spec
    memagg:expected_wss_mb = ``expected_wss_mb`` (as given)."""
    extra_specs = {}
    if expected_wss_mb is not None:
        extra_specs[filters.EXTRA_SPEC] = expected_wss_mb
    flavor = objects.Flavor(name='m%d' % memory_mb, flavorid=str(memory_mb),
                            memory_mb=memory_mb, vcpus=1, root_gb=1,
                            ephemeral_gb=0, swap=0, extra_specs=extra_specs)
    return objects.RequestSpec(
        flavor=flavor, num_instances=num_instances,
        instance_uuid=str(uuid.uuid4()),
        pci_requests=objects.InstancePCIRequests(requests=[]),
        numa_topology=None,
        scheduler_hints={'_nova_check_type': ['rebuild']} if rebuild else {})
