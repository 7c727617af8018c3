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

"""memagg-compute's period loop survives a libvirtd restart: the QEMU
process of a running guest outlives the daemon, and once libvirtd answers
again the loop reconnects and goes on estimating and ballooning that guest.
"""
import os
import signal

import libvirt
import pytest

from memagg.drivers.hypervisor import base
from memagg.drivers.hypervisor import qemu_process
from memagg.tests.functional import guest_fixtures
from memagg.tests.functional.guest_fixtures import PeriodLoop
from memagg.demo import guest as vm
from memagg.tests import polling

# The host lane (memagg/tests/lanes.py): signals every libvirtd.
pytestmark = [pytest.mark.functional, pytest.mark.slow, pytest.mark.host]

PERIOD = 3


def stop_libvirtd():
    """Stop this host's libvirtd, no other (a host B's); its guests keep
    running."""
    pid = guest_fixtures.system_pid('libvirtd')
    assert pid, 'libvirtd is not running'
    os.kill(pid, signal.SIGTERM)
    polling.wait_for(lambda: polling.gone(pid), 60, interval=0.2,
                     message='libvirtd %d exiting' % pid)


def test_the_loop_survives_a_libvirtd_restart(qemu_workdir, conf):
    conf.config(collect_interval=PERIOD, balloon_stats_period=2,
                group='compute')
    conf.config(estimator='badis', group='wss')
    uri = guest_fixtures.ensure_libvirtd()
    conn = libvirt.open(uri)
    guest = vm.Guest(conn, qemu_workdir, 'memagg-libvirtd-restart',
                     memory_mb=256)
    loop = None
    try:
        guest.start()
        guest.set_hot(60)
        qemu = qemu_process.qemu_pid(guest.name)
        loop = PeriodLoop(PERIOD, 'memagg-libvirtd-restart$').start()

        def sampled(since):
            # A result from the sampler: the guest's RAM was found in its
            # QEMU process and a window went through.
            def check():
                rows = loop.history(guest.uuid, since)
                return any(r.wss_mb is not None and 'sampler' in r.estimator
                           for _n, r in rows) and rows
            return polling.wait_for(check, 10 * PERIOD + 30, interval=0.5,
                                    message='a sampled estimate')
        sampled(0)
        assert not loop.errors, loop.errors
        beats = guest.heartbeats()

        # The other lane's guest tests wait for the outage to end rather
        # than start libvirtd during it (a CI run).
        with guest_fixtures.libvirtd_outage():
            stop_libvirtd()
            # A period in the outage: the loop meets libvirtd down.
            down = len(loop.errors)
            polling.wait_for(lambda: len(loop.errors) > down,
                             4 * PERIOD + 30, interval=0.2,
                             message='a period in the outage')
        # Started again the way the real-guest tests start it.
        guest_fixtures.ensure_libvirtd()
        conn.close()
        conn = libvirt.open(uri)
        # The first period that starts once libvirtd answers again.
        since = len(loop.reports) + 1
        sampled(since)
        # Once the loop is back, two more periods go through cleanly.
        failed = len(loop.errors)
        reports = len(loop.reports)
        polling.wait_for(lambda: len(loop.reports) >= reports + 2,
                         4 * PERIOD + 30, interval=0.5,
                         message='two more periods')
        assert loop.errors[failed:] == [], loop.errors[failed:]
        # Periods that fell in the outage failed with the driver's own
        # error, nothing else.
        outage = loop.errors[:failed]
        assert outage, 'no period met libvirtd down'
        assert all(isinstance(e, base.HypervisorUnavailable)
                   for e in outage), outage
        # The same QEMU process, still running its guest, estimated and
        # given a balloon target.
        assert qemu_process.qemu_pid(guest.name) == qemu
        last = loop.history(guest.uuid)[-1][1]
        assert last.target_mb is not None and last.wss_mb is not None, last
        polling.wait_for(lambda: guest.heartbeats() > beats, 30,
                         interval=0.5, message='heartbeat of the guest')
        assert conn.lookupByUUIDString(guest.uuid).isActive() == 1
        print('libvirtd restart: %d period(s) failed in the outage; after: '
              '%s' % (len(outage), [(r.wss_mb, r.target_mb, r.estimator)
                                    for _n, r in loop.history(guest.uuid,
                                                              since)]))
    finally:
        if loop is not None:
            loop.stop()
        guest.dom = None  # of the connection before the restart
        guest.destroy()
        conn.close()
        # libvirtd may still be down (the test failed in the outage): a
        # guest left running would slow every later test of the lane.
        conn = libvirt.open(guest_fixtures.ensure_libvirtd())
        try:
            conn.lookupByUUIDString(guest.uuid).destroy()
        except libvirt.libvirtError:
            pass  # not running (it never started, or it died)
        conn.close()
