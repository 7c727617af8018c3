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

"""Where a libvirt guest's QEMU process and its RAM are.

The QEMU pid comes from libvirt's pid file (/run/libvirt/qemu/<name>.pid for
qemu:///system), else from the process whose command line carries ``-name
guest=<name>``. The RAM's host virtual address comes from QEMU's monitor:
HMP ``gpa2hva 0`` names the RAM block holding guest physical address 0
(pc.ram) and its host address, and ``info ramblock`` gives that block's used
length. Without the monitor, the guest RAM is the one writable mapping of
/proc/PID/maps whose size is the guest's maximum memory.
"""
import glob
import os
import re

PID_DIRS = ('/run/libvirt/qemu', '/var/run/libvirt/qemu')

_GPA2HVA = re.compile(
    r'Host virtual address for 0x0 \((?P<block>[^)]+)\) is '
    r'(?P<hva>0x[0-9a-fA-F]+)')


def parse_gpa2hva(text):
    """(block name, host address) from HMP ``gpa2hva 0``, or None."""
    match = _GPA2HVA.search(text)
    if match is None:
        return None
    return match.group('block'), int(match.group('hva'), 16)


def parse_ramblock(text, block):
    """The used length in bytes of RAM block ``block`` from HMP ``info
    ramblock``, or None. Columns: name, page size (two words), offset,
    used, total."""
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 6 and fields[0] == block:
            try:
                return int(fields[-2], 16)
            except ValueError:
                return None
    return None


def parse_maps(text):
    """(start, end, perms, path) for each line of /proc/PID/maps."""
    result = []
    for line in text.splitlines():
        fields = line.split(None, 5)
        if len(fields) < 5:
            continue
        start, end = (int(x, 16) for x in fields[0].split('-'))
        result.append((start, end, fields[1],
                       fields[5] if len(fields) > 5 else ''))
    return result


def mapping_of(maps, address):
    """The (start, end, perms, path) of ``maps`` holding ``address``."""
    for entry in maps:
        if entry[0] <= address < entry[1]:
            return entry
    return None


def ram_mapping_by_size(maps, size):
    """Start of the one writable private-anonymous or memfd mapping of
    exactly ``size`` bytes, or None when there is none or several."""
    found = [start for start, end, perms, path in maps
             if end - start == size and perms.startswith('rw')
             and (path == '' or path.startswith('/memfd:'))]
    return found[0] if len(found) == 1 else None


def qemu_pid(name, pid_dirs=PID_DIRS, proc='/proc'):
    """The pid of the QEMU process running domain ``name``, or None."""
    for directory in pid_dirs:
        try:
            with open(os.path.join(directory, name + '.pid')) as f:
                pid = int(f.read().strip())
        except (OSError, ValueError):
            continue
        if os.path.exists(os.path.join(proc, str(pid))):
            return pid
    wanted = 'guest=%s' % name
    for cmdline in glob.glob(os.path.join(proc, '[0-9]*', 'cmdline')):
        try:
            with open(cmdline, 'rb') as f:
                args = f.read().decode(errors='replace').split('\0')
        except OSError:
            continue  # the process ended while we looked
        for i, arg in enumerate(args[:-1]):
            if arg == '-name' and args[i + 1].split(',')[0] == wanted:
                return int(cmdline.split(os.sep)[-2])
    return None
