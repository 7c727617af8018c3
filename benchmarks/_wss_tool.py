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

"""The peer of memagg's WSS sampler in the benchmarks: the wss tool's
method (Brendan Gregg's wss.pl), which clears a process's referenced bits
through /proc/PID/clear_refs, waits, and sums the Referenced: lines of
/proc/PID/smaps over the range of interest.
"""


def clear_refs(pid):
    """Clear every referenced bit of process ``pid``."""
    with open('/proc/%d/clear_refs' % pid, 'w') as f:
        f.write('1')


def referenced_bytes(pid, start, length):
    """Bytes of ``pid``'s mappings overlapping [start, start + length)
    referenced since the last clear_refs()."""
    referenced_kb = 0
    inside = False
    with open('/proc/%d/smaps' % pid) as f:
        for line in f:
            head = line.split(None, 1)[0]
            if '-' in head and not head.endswith(':'):
                lo, hi = (int(x, 16) for x in head.split('-'))
                inside = lo < start + length and hi > start
            elif inside and head == 'Referenced:':
                referenced_kb += int(line.split()[1])
    return referenced_kb * 1024
