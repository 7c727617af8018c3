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

"""The memcg mechanism: memory.reclaim of the VM's cgroup (cgroup v2)."""
import pytest

from memagg.drivers.hypervisor import base as hypervisor
from memagg.drivers.reclaim import base as mechanism_base
from memagg.drivers.reclaim import memcg

MIB = 1 << 20


def test_memcg_needs_the_unified_memory_controller(tmp_path):
    with pytest.raises(mechanism_base.Unavailable, match='cgroup v1'):
        memcg.MemcgMechanism(root=str(tmp_path)).check_host()
    (tmp_path / 'cgroup.controllers').write_text('cpu io\n')
    with pytest.raises(mechanism_base.Unavailable,
                       match='no memory controller'):
        memcg.MemcgMechanism(root=str(tmp_path)).check_host()
    (tmp_path / 'cgroup.controllers').write_text('cpu memory\n')
    memcg.MemcgMechanism(root=str(tmp_path)).check_host()


def test_memcg_writes_the_amount_to_the_vms_cgroup(tmp_path):
    root, proc = tmp_path / 'cg', tmp_path / 'proc'
    (root / 'machine.slice' / 'vm1').mkdir(parents=True)
    (root / 'machine.slice' / 'vm1' / 'memory.reclaim').write_text('')
    (proc / '9').mkdir(parents=True)
    (proc / '9' / 'cgroup').write_text('0::/machine.slice/vm1\n')
    mechanism = memcg.MemcgMechanism(root=str(root), proc=str(proc))
    memory = hypervisor.GuestMemory(pid=9, start=0, length=MIB,
                                    method='test')
    mechanism.reclaim(memory, [], 8 * MIB)
    assert (root / 'machine.slice' / 'vm1' / 'memory.reclaim').read_text() \
        == str(8 * MIB)
    (proc / '9' / 'cgroup').write_text('0::/elsewhere\n')
    with pytest.raises(mechanism_base.Unavailable, match='does not exist'):
        mechanism.reclaim(memory, [], MIB)
