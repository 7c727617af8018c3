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

"""Helpers of the real-guest tests: libvirtd and virtlogd running, and
memagg-compute's period loop in a thread."""
import contextlib
import fcntl
import os
import shutil
import subprocess
import threading

import pytest

from memagg.compute import collector as collector_mod
from memagg.compute import memory as memory_mod
from memagg.conf import CONF
from memagg.drivers.hypervisor import libvirt_driver
from memagg.tests import polling

URI = 'qemu:///system'
# libvirtd under a subreaper, as tools/setup.sh's start_libvirt says why.
LIBVIRTD = ['tini', '-s', '--', 'libvirtd']


# This host's own daemons write these; a host B (hypervisor_hosts) runs its
# libvirtd and virtlogd with a /run of their own, where pidof would count
# them too.
PID_FILES = {'libvirtd': '/run/libvirtd.pid', 'virtlogd': '/run/virtlogd.pid'}


def system_pid(name):
    """The pid of this host's own ``name`` (libvirtd or virtlogd), or None
    when it does not run."""
    try:
        with open(PID_FILES[name]) as f:
            pid = int(f.read().strip())
        os.kill(pid, 0)
    except (FileNotFoundError, ValueError, ProcessLookupError):
        return None
    return pid


#: Held exclusively (flock) by a host-lane test while it keeps this
#: machine's libvirtd down on purpose (libvirtd_outage): ensure_libvirtd in
#: the other lane's tests waits for it rather than start libvirtd under
#: that test.
OUTAGE_LOCK = '/run/lock/memagg-tests-libvirtd-outage'
#: Bound on an outage another test holds (test_guest_libvirtd_restart's
#: lasts a few periods).
OUTAGE_TIMEOUT = 300


@contextlib.contextmanager
def libvirtd_outage():
    """Hold the outage lock for the block, which stops libvirtd on purpose
    and must not call ensure_libvirtd itself."""
    fd = os.open(OUTAGE_LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _outage_over(fd):
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def ensure_libvirtd():
    """Make libvirtd answer at qemu:///system (start virtlogd and libvirtd
    when they are not running, once no test holds it down on purpose);
    return the URI."""
    if shutil.which('libvirtd') is None:
        pytest.fail('libvirtd is not installed: run tools/setup.sh')
    fd = os.open(OUTAGE_LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        polling.wait_for(lambda: _outage_over(fd), OUTAGE_TIMEOUT,
                         interval=0.5, message='the end of a libvirtd '
                         'outage another test holds')
        if system_pid('virtlogd') is None:
            subprocess.run(['virtlogd', '-d'], check=True)
        if system_pid('libvirtd') is None:
            subprocess.Popen(LIBVIRTD, start_new_session=True,
                             stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    finally:
        os.close(fd)
    polling.wait_for(lambda: libvirt_driver.answers(URI), 30,
                     interval=0.5, message='libvirtd answering')
    return URI


class PeriodLoop:
    """memagg-compute's period (Collector.run_period) every ``interval`` s
    in a thread, as its periodic task runs it; keeps every report. It
    manages the domains whose name the regular expression ``guests``
    matches ([compute] domain_name_regex): the test's, no other's."""

    def __init__(self, interval, guests):
        CONF.set_override('domain_name_regex', guests, group='compute')
        self.driver = libvirt_driver.LibvirtDriver(URI)
        self.memory = memory_mod.MemoryManager(self.driver, CONF)
        self.collector = collector_mod.Collector(self.driver, 'guest-test',
                                                 self.memory)
        self.interval = interval
        self.reports = []
        self.errors = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while True:
            try:
                self.reports.append(self.collector.run_period())
            except Exception as exc:  # noqa: BLE001 - the test reports it
                self.errors.append(exc)
            if self._stop.wait(self.interval):
                return

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        self._thread.join(60)
        self.memory.close()
        self.driver.close()

    def instance(self, report, uuid):
        return next((i for i in report.instances if i.uuid == uuid), None)

    def history(self, uuid, since=0):
        """[(report index, InstanceReport)] of ``uuid`` from ``since``."""
        return [(n, self.instance(r, uuid))
                for n, r in enumerate(self.reports[since:], since)
                if self.instance(r, uuid) is not None]
