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

"""process_madvise(MADV_PAGEOUT) on runs of QEMU's guest-RAM mapping.

The runs are the sampler's cold set (memagg.compute.reclaim): the kernel
pages out exactly those pages, through the same native process_madvise
path that splits huge pages for the sampler (native/src/thp.c). A run
that covers part of a transparent huge page makes the kernel split it and
page out the part; a run covering the whole 2 MiB pages it out whole.
"""
import errno

from memagg import _native
from memagg.drivers.hypervisor import base as hypervisor
from memagg.drivers.reclaim import base


class MadviseMechanism(base.Mechanism):
    name = 'madvise'

    def check_host(self):
        # The syscall's presence is seen at the first page-out: a kernel
        # without it (before 5.10) answers ENOSYS there, reported per VM.
        pass

    def reclaim(self, memory, runs, amount_bytes):
        if not runs:
            return
        try:
            _native.page_out(memory.pid, runs)
        except OSError as exc:
            if exc.errno == errno.ESRCH:
                raise hypervisor.DomainGone(str(exc))
            if exc.errno == errno.ENOMEM:
                # The mapping changed under us (QEMU remapped its RAM):
                # the sampler finds it again; nothing is lost.
                raise base.Unavailable('guest RAM moved during the '
                                       'page-out: %s' % exc)
            raise base.Unavailable(str(exc))
