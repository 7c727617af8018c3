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

"""The libvirt driver's remote-swap disk on a real QEMU guest (TCG): a
persistent domain gets the NBD export hot-plugged live and in its
definition with memagg's serial, the guest turns it into swap (the guest
rule), a second attach changes nothing, and detach removes it from both.

The NBD server is qemu-nbd over a unix socket (what TESTBED.md verified
the disk XML with); the same attach against memagg-swapd's export is in
test_compute_remote_swapd.py and the end-to-end swapping test.
"""
import os
import signal
import subprocess
import xml.etree.ElementTree as ElementTree

import libvirt
import pytest

from memagg.drivers.hypervisor import base
from memagg.drivers.hypervisor import libvirt_driver
from memagg.tests.functional import guest_fixtures
from memagg.demo import guest as vm
from memagg.tests import polling

# The host lane (memagg/tests/lanes.py): its guest is on this machine's
# libvirtd, which test_guest_libvirtd_restart stops for a while.
pytestmark = [pytest.mark.functional, pytest.mark.slow, pytest.mark.host]

GRANT = '5e1d2c3b-4a59-4678-9abc-def012345678'


@pytest.fixture
def nbd_export(qemu_workdir):
    """qemu-nbd serving a 64 MiB raw file on a unix socket: (socket,
    export name)."""
    image = os.path.join(qemu_workdir, 'swap.img')
    with open(image, 'wb') as f:
        f.truncate(64 * 1024 * 1024)
    sock = os.path.join(qemu_workdir, 'nbd.sock')
    export = 'memagg-swap-' + GRANT
    proc = subprocess.Popen(
        ['qemu-nbd', '--socket', sock, '--export-name', export,
         '--format', 'raw', '--persistent', '--shared', '4', image],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        polling.wait_for(lambda: os.path.exists(sock) or proc.poll()
                         is not None, 20, message='qemu-nbd socket')
        assert proc.poll() is None, proc.stderr.read()
        os.chmod(sock, 0o666)
        yield sock, export
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)


@pytest.fixture
def persistent_guest(qemu_workdir):
    conn = libvirt.open(guest_fixtures.ensure_libvirtd())
    guest = vm.Guest(conn, qemu_workdir,
                     'memagg-swapdisk-%d' % os.getpid())
    dom = conn.defineXML(guest.xml)
    try:
        dom.create()
        guest.dom = dom
        guest.wait_console(r'MEMAGG READY', 120)
        yield guest
    finally:
        guest.destroy()
        try:
            dom.undefine()
        except libvirt.libvirtError:
            pass
        conn.close()


def _serials(dom, flags=0):
    tree = ElementTree.fromstring(dom.XMLDesc(flags))
    return [d.findtext('serial') for d in tree.findall('./devices/disk')]


def test_hot_plug_into_a_persistent_guest_and_out_again(persistent_guest,
                                                        nbd_export):
    guest = persistent_guest
    sock, export = nbd_export
    serial = base.swap_serial(GRANT)
    driver = libvirt_driver.LibvirtDriver(guest_fixtures.URI)
    try:
        mark = len(guest.console_text())
        target = driver.attach_swap_disk(guest.uuid, sock, export, serial)
        assert target == 'vda'      # the test guest has no other disk
        assert _serials(guest.dom) == [serial]
        assert _serials(guest.dom, libvirt.VIR_DOMAIN_XML_INACTIVE) == [
            serial]
        # QEMU opened the export: the disk's size is the NBD export's.
        assert guest.dom.blockInfo(target)[0] == 64 * 1024 * 1024
        # The guest found the disk by its serial and swaps on it.
        dev = guest.wait_swap_disk(serial, timeout=60, after=mark)
        area = polling.wait_for(lambda: (guest.heartbeat() or {}).get(
            'swaps', {}).get(dev), 30,
            message='swap area %s in a heartbeat' % dev)
        assert area['size_kb'] > 60 * 1024
        assert area['priority'] == 32767

        assert driver.attach_swap_disk(guest.uuid, sock, export,
                                       serial) == target
        assert _serials(guest.dom) == [serial]

        assert driver.detach_swap_disk(guest.uuid, serial) is True
        assert _serials(guest.dom, libvirt.VIR_DOMAIN_XML_INACTIVE) == []
        polling.wait_for(lambda: _serials(guest.dom) == [], 60,
                         message='the disk gone from the live guest')
        assert driver.detach_swap_disk(guest.uuid, serial) is False
    finally:
        driver.close()
