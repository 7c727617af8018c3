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

"""The demo cloud's guests on the real libvirtd (TCG): one libvirt refuses
and one whose kernel panics are reported, the panic with its console's
lines, and the others go on; stop(), even during a boot, leaves no domain
and no file behind. (memagg-aio --demo as a whole: test_aio.py.)"""
import os

import libvirt
import pytest

from memagg.demo import cloud
from memagg.tests.functional import guest_fixtures
from memagg.tests import polling

# The host lane (memagg/tests/lanes.py): guests under this machine's
# libvirtd, which test_guest_libvirtd_restart stops for a while (and
# guest_fixtures.ensure_libvirtd, here, would start again under it).
pytestmark = [pytest.mark.functional, pytest.mark.slow, pytest.mark.host]

# Not the demo's own prefix: memagg-aio --demo's test counts those.
NAME = 'memagg-test-demo-%s-' % (os.environ.get('PYTEST_XDIST_WORKER')
                                 or 'main')


def test_a_guest_that_does_not_boot_is_reported_and_the_others_go_on():
    conn = libvirt.open(guest_fixtures.ensure_libvirtd())
    said = []
    workloads = (
        # No memory at all: libvirt refuses the domain.
        cloud.Workload(NAME + 'broken', 0, 'stats', (8,), 'nothing'),
        # Room for its kernel and initrd but not for the kernel's own start
        # (68 to 78 MiB here): the kernel panics out of memory, its
        # domain ends (panic=-1, on_reboot destroy) some seconds in.
        cloud.Workload(NAME + 'panics', 72, 'stats', (8,), 'nothing'),
        cloud.Workload(NAME + 'fine', 128, 'stats', (8,), 'a small hot set'),
    )
    demo = cloud.DemoCloud(conn, workloads, say=said.append)
    try:
        demo.start()
        polling.wait_for(lambda: NAME + 'fine' in demo.guests, 180,
                         interval=0.5, message='the second guest up')
        running = [d.name() for d in conn.listAllDomains()
                   if d.name().startswith(NAME)]
    finally:
        demo.stop()
    left = [d.name() for d in conn.listAllDomains()
            if d.name().startswith(NAME)]
    conn.close()
    assert running == [NAME + 'fine']
    assert list(demo.failed) == [NAME + 'broken', NAME + 'panics']
    assert said[0].startswith('demo: %sbroken did not boot (' % NAME)
    assert said[0].endswith('); the demo goes on without it')
    assert 'its console ended: (empty)' in said[0]
    # Told when its domain ended, not at the boot's timeout, with the
    # panic's lines rather than its call trace's frames.
    assert said[1].startswith(
        'demo: %spanics did not boot (%spanics stopped before /MEMAGG '
        'READY/ on its console; its console ended: ' % (NAME, NAME)), said[1]
    assert 'Kernel panic - not syncing' in said[1], said[1]
    assert '<TASK>' not in said[1] and '+0x' not in said[1], said[1]
    assert said[2].startswith('demo: %sfine is up (128 MiB, uuid ' % NAME)
    assert left == []
    assert not os.path.exists(demo.workdir)


def test_stop_during_a_boot_leaves_nothing_and_reports_no_failure():
    conn = libvirt.open(guest_fixtures.ensure_libvirtd())
    demo = cloud.DemoCloud(conn, (cloud.Workload(
        NAME + 'stopped', 128, 'stats', (8,), 'nothing'),), say=print)
    try:
        demo.start()
        polling.wait_for(lambda: any(
            d.name() == NAME + 'stopped' for d in conn.listAllDomains()),
            60, interval=0.05, message='the guest booting')
    finally:
        demo.stop()
    left = [d.name() for d in conn.listAllDomains()
            if d.name().startswith(NAME)]
    conn.close()
    assert left == []
    assert demo.failed == {}
    assert not os.path.exists(demo.workdir)
