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

"""Finding a guest's QEMU process and RAM from the monitor and /proc."""
from memagg.drivers.hypervisor import qemu_process

GPA2HVA = 'Host virtual address for 0x0 (pc.ram) is 0x7f4e47e00000\r\n'
RAMBLOCK = """\
              Block Name    PSize              Offset               Used              Total
                  pc.ram    4 KiB  0x0000000000000000 0x0000000010000000 0x0000000010000000
                 pc.bios    4 KiB  0x0000000010000000 0x0000000000040000 0x0000000000040000
"""  # noqa: E501
MAPS = """\
55d0c0a00000-55d0c0b00000 r-xp 00000000 fe:01 131 /usr/bin/qemu-system-x86_64
7f4e47e00000-7f4e57e00000 rw-p 00000000 00:00 0
7f4e58000000-7f4e97fff000 rwxp 00000000 00:00 0
7f4e98000000-7f4ea8000000 rw-s 00000000 00:01 309 /memfd:pc.ram (deleted)
"""


def test_guest_ram_from_the_monitor_answers():
    assert qemu_process.parse_gpa2hva(GPA2HVA) == ('pc.ram', 0x7f4e47e00000)
    assert qemu_process.parse_gpa2hva('unknown command') is None
    assert qemu_process.parse_ramblock(RAMBLOCK, 'pc.ram') == 256 << 20
    assert qemu_process.parse_ramblock(RAMBLOCK, 'pc.bios') == 256 << 10
    assert qemu_process.parse_ramblock(RAMBLOCK, 'nosuch') is None


def test_guest_ram_by_size_needs_exactly_one_mapping():
    maps = qemu_process.parse_maps(MAPS)
    assert qemu_process.mapping_of(maps, 0x7f4e47e00000 + 5)[0] == (
        0x7f4e47e00000)
    # Two 256 MiB candidates (anonymous and memfd): ambiguous.
    assert qemu_process.ram_mapping_by_size(maps, 256 << 20) is None
    assert qemu_process.ram_mapping_by_size(maps[:2], 256 << 20) == (
        0x7f4e47e00000)
    assert qemu_process.ram_mapping_by_size(maps, 512 << 20) is None


def test_qemu_pid_from_the_pid_file_or_the_command_line(tmp_path):
    proc = tmp_path / 'proc'
    (proc / '4242').mkdir(parents=True)
    (proc / '4242' / 'cmdline').write_bytes(
        b'qemu-system-x86_64\0-name\0guest=vm1,debug-threads=on\0')
    run = tmp_path / 'run'
    run.mkdir()
    assert qemu_process.qemu_pid('vm1', (str(run),), str(proc)) == 4242
    assert qemu_process.qemu_pid('vm2', (str(run),), str(proc)) is None
    (proc / '77').mkdir()
    (run / 'vm2.pid').write_text('77\n')
    assert qemu_process.qemu_pid('vm2', (str(run),), str(proc)) == 77
