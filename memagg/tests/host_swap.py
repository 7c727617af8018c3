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

"""A swap file added to the host for a test and removed after it, zswap
put back as it was (TESTBED.md: no swap device is configured here); and
how much of a process stays resident."""
import contextlib
import os
import tempfile

from memagg.demo import swap as demo_swap

ZSWAP = '/sys/module/zswap/parameters/enabled'


def rss_mb(pid):
    """Process ``pid``'s resident memory (VmRSS), MiB."""
    with open('/proc/%d/status' % pid) as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1]) / 1024.0
    raise AssertionError('no VmRSS for %d' % pid)


def _zswap():
    try:
        with open(ZSWAP) as f:
            return f.read().strip()
    except OSError:
        return None


def _set_zswap(value):
    with open(ZSWAP, 'w') as f:
        f.write(value)


@contextlib.contextmanager
def swap_file(size_mb, zswap=False):
    """A ``size_mb`` MiB swap file on (zswap on in front of it with
    ``zswap``); the path. Root only."""
    before = _zswap()
    fd, path = tempfile.mkstemp(prefix='memagg-test-swap-', dir='/tmp')
    os.close(fd)
    swap = demo_swap.SwapFile(path, size_mb)
    try:
        if before is not None:
            _set_zswap('Y' if zswap else 'N')
        swap.on()
        yield path
    finally:
        try:
            swap.off()
        finally:
            # zswap goes back as it was even when swapoff failed.
            if before is not None:
                _set_zswap(before)
