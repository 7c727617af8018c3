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

"""The VM's cgroup v2 ``memory.reclaim``: the kernel reclaims an amount from
the cgroup of QEMU, choosing the pages on its own LRU lists.

Only on the unified hierarchy (cgroup v2) with the memory controller: on a
cgroup v1 host (as here) check_host() says so and auto falls back.
"""
import errno
import os

from memagg.drivers.hypervisor import base as hypervisor
from memagg.drivers.reclaim import base

CGROUP_ROOT = '/sys/fs/cgroup'


def unified_path(pid, proc='/proc'):
    """The cgroup v2 path ('0::<path>') of process ``pid``, or None."""
    try:
        with open(os.path.join(proc, str(pid), 'cgroup')) as f:
            for line in f:
                hierarchy, _, rest = line.rstrip('\n').partition(':')
                controllers, _, path = rest.partition(':')
                if hierarchy == '0' and controllers == '':
                    return path
    except FileNotFoundError:
        raise hypervisor.DomainGone('process %d is gone' % pid)
    return None


class MemcgMechanism(base.Mechanism):
    name = 'memcg'
    targeted = False

    def __init__(self, root=CGROUP_ROOT, proc='/proc'):
        self.root = root
        self.proc = proc

    def check_host(self):
        try:
            with open(os.path.join(self.root, 'cgroup.controllers')) as f:
                controllers = f.read().split()
        except OSError:
            raise base.Unavailable(
                'no cgroup v2 memory controller at %s (cgroup v1 host: '
                'memory.reclaim exists only on the unified hierarchy)'
                % self.root)
        if 'memory' not in controllers:
            raise base.Unavailable(
                'the unified hierarchy at %s has no memory controller '
                '(controllers: %s)' % (self.root, ' '.join(controllers)
                                       or 'none'))

    def reclaim(self, memory, runs, amount_bytes):
        if amount_bytes <= 0:
            return
        path = unified_path(memory.pid, self.proc)
        target = os.path.join(self.root, (path or '/').lstrip('/'),
                              'memory.reclaim')
        try:
            with open(target, 'w') as f:
                f.write('%d' % amount_bytes)
        except FileNotFoundError:
            raise base.Unavailable('%s does not exist (kernel before 5.19, '
                                   'or QEMU in the root cgroup)' % target)
        except OSError as exc:
            # EAGAIN: the kernel reclaimed less than asked; not an error
            # of the mechanism, the controller sees it in VmSwap.
            if exc.errno != errno.EAGAIN:
                raise base.Unavailable('%s: %s' % (target, exc.strerror))
