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

"""The remote-swap disk of the libvirt driver: its XML, the target it
takes, and the flags of attach and detach.

libvirt's test:///default driver cannot hot-plug devices (it answers
VIR_ERR_NO_SUPPORT): a test checks that this comes out as Unsupported;
the flags and idempotency are checked against a small in-test domain
standing in for virDomain (what the driver calls on it), and the real
hot-plug into a QEMU guest is test_libvirt_swap_disk_guest.py.
"""
import xml.etree.ElementTree as ElementTree

import libvirt
import pytest

from memagg.drivers.hypervisor import base
from memagg.drivers.hypervisor import libvirt_driver

GRANT = '0b4f7e0c-8d7a-4f3b-9a51-3c2d1e0f9a8b'
SERIAL = 'memagg-swap-0b4f7e0c'
TEST_DOMAIN_UUID = '6695eb01-f6a4-8304-79aa-97f2502e193f'

DOMAIN = """<domain type='qemu'><name>vm</name><devices>
%s
</devices></domain>"""
FILE_DISK = ("<disk type='file' device='disk'><source file='/a'/>"
             "<target dev='%s' bus='virtio'/></disk>")


def test_serial_is_the_prefix_and_eight_hex_digits():
    assert base.swap_serial(GRANT) == SERIAL
    assert base.swap_serial(GRANT.upper()) == SERIAL
    assert len(SERIAL) <= 20


def test_disk_xml_is_the_testbed_nbd_disk():
    disk = ElementTree.fromstring(libvirt_driver.swap_disk_xml(
        '/run/memagg/swapd/exports/%s.sock' % GRANT, 'memagg-swap-' + GRANT,
        SERIAL, 'vdc'))
    assert (disk.get('type'), disk.get('device')) == ('network', 'disk')
    # An error of the disk pauses the VM rather than reaching the guest.
    assert disk.find('driver').attrib == {'name': 'qemu', 'type': 'raw',
                                          'cache': 'none',
                                          'error_policy': 'stop',
                                          'rerror_policy': 'stop'}
    source = disk.find('source')
    assert source.attrib == {'protocol': 'nbd',
                             'name': 'memagg-swap-' + GRANT}
    assert source.find('host').attrib == {
        'transport': 'unix',
        'socket': '/run/memagg/swapd/exports/%s.sock' % GRANT}
    assert source.find('reconnect') is None
    assert disk.find('target').attrib == {'dev': 'vdc', 'bus': 'virtio'}
    assert disk.findtext('serial') == SERIAL


def test_disk_xml_asks_qemu_to_wait_for_a_restarted_server():
    disk = ElementTree.fromstring(libvirt_driver.swap_disk_xml(
        '/s.sock', 'e', SERIAL, 'vdb', reconnect_delay=30))
    assert disk.find('source/reconnect').attrib == {'delay': '30'}


@pytest.mark.parametrize('used, expected', [
    (set(), 'vda'),
    ({'vda'}, 'vdb'),
    ({'vda', 'vdc', 'hda'}, 'vdb'),
    ({'vd' + chr(c) for c in range(ord('a'), ord('z') + 1)}, 'vdaa'),
])
def test_first_free_virtio_target(used, expected):
    assert libvirt_driver.free_virtio_target(used) == expected


class Domain:
    """Stands in for a virDomain: its live and inactive XML, and the
    attach/detach calls with their flags."""

    def __init__(self, live, config=None, active=True):
        self.live = live
        self.config = config
        self.active = active
        self.calls = []

    def name(self):
        return 'vm'

    def isPersistent(self):
        return self.config is not None

    def isActive(self):
        return self.active

    def XMLDesc(self, flags=0):
        if flags & libvirt.VIR_DOMAIN_XML_INACTIVE:
            return self.config
        return self.live

    def attachDeviceFlags(self, xml, flags):
        self.calls.append(('attach', xml, flags))

    def connect(self):
        return self

    def getLibVersion(self):
        return 9000000

    def detachDeviceFlags(self, xml, flags):
        self.calls.append(('detach', xml, flags))


class Conn:
    def __init__(self, dom):
        self.dom = dom

    def lookupByUUIDString(self, uuid):
        return self.dom

    def close(self):
        pass


def driver_with(dom):
    driver = libvirt_driver.LibvirtDriver('test:///default')
    driver._conn = Conn(dom)
    return driver


def test_transient_domain_gets_a_live_disk_on_the_first_free_target():
    dom = Domain(DOMAIN % (FILE_DISK % 'vda'))
    target = driver_with(dom).attach_swap_disk(
        'u', '/s.sock', 'memagg-swap-' + GRANT, SERIAL)
    assert target == 'vdb'
    [(call, xml, flags)] = dom.calls
    assert call == 'attach' and flags == libvirt.VIR_DOMAIN_AFFECT_LIVE
    disk = ElementTree.fromstring(xml)
    assert disk.find('target').get('dev') == 'vdb'
    assert disk.findtext('serial') == SERIAL


def test_persistent_domain_gets_it_in_its_definition_too():
    # vdb is free live but taken in the definition: neither may clash.
    dom = Domain(DOMAIN % (FILE_DISK % 'vda'),
                 config=DOMAIN % (FILE_DISK % 'vda' + FILE_DISK % 'vdb'))
    target = driver_with(dom).attach_swap_disk('u', '/s.sock', 'e', SERIAL)
    assert target == 'vdc'
    assert dom.calls[0][2] == (libvirt.VIR_DOMAIN_AFFECT_LIVE
                               | libvirt.VIR_DOMAIN_AFFECT_CONFIG)


def test_attach_is_idempotent_by_serial():
    plugged = libvirt_driver.swap_disk_xml('/s.sock', 'e', SERIAL, 'vdd')
    dom = Domain(DOMAIN % plugged)
    assert driver_with(dom).attach_swap_disk('u', '/s.sock', 'e',
                                             SERIAL) == 'vdd'
    assert dom.calls == []


def test_detach_removes_it_live_and_from_the_definition():
    plugged = libvirt_driver.swap_disk_xml('/s.sock', 'e', SERIAL, 'vdb')
    dom = Domain(DOMAIN % (FILE_DISK % 'vda' + plugged),
                 config=DOMAIN % plugged)
    assert driver_with(dom).detach_swap_disk('u', SERIAL) is True
    assert [(c, f) for c, _, f in dom.calls] == [
        ('detach', libvirt.VIR_DOMAIN_AFFECT_LIVE),
        ('detach', libvirt.VIR_DOMAIN_AFFECT_CONFIG)]
    assert all(ElementTree.fromstring(xml).findtext('serial') == SERIAL
               for _, xml, _ in dom.calls)


def test_detach_of_a_shut_off_domain_edits_only_its_definition():
    plugged = libvirt_driver.swap_disk_xml('/s.sock', 'e', SERIAL, 'vdb')
    dom = Domain(None, config=DOMAIN % plugged, active=False)
    assert driver_with(dom).detach_swap_disk('u', SERIAL) is True
    assert [(c, f) for c, _, f in dom.calls] == [
        ('detach', libvirt.VIR_DOMAIN_AFFECT_CONFIG)]


def test_detach_without_such_disk_changes_nothing():
    dom = Domain(DOMAIN % (FILE_DISK % 'vda'))
    assert driver_with(dom).detach_swap_disk('u', SERIAL) is False
    assert dom.calls == []


def test_the_test_driver_cannot_hot_plug_and_says_so():
    driver = libvirt_driver.LibvirtDriver('test:///default')
    try:
        with pytest.raises(base.Unsupported) as info:
            driver.attach_swap_disk(TEST_DOMAIN_UUID, '/s.sock', 'e', SERIAL)
        assert 'not supported' in str(info.value)
        with pytest.raises(base.DomainGone):
            driver.attach_swap_disk('00000000-0000-0000-0000-000000000001',
                                    '/s.sock', 'e', SERIAL)
    finally:
        driver.close()


class OldLibvirtDomain(Domain):
    """A domain of a libvirt that knows no <reconnect> on NBD disks: the
    plugged disk shows up live without it."""

    def attachDeviceFlags(self, xml, flags):
        super().attachDeviceFlags(xml, flags)
        disk = ElementTree.fromstring(xml)
        source = disk.find('source')
        for reconnect in source.findall('reconnect'):
            source.remove(reconnect)
        self.live = DOMAIN % ElementTree.tostring(disk, encoding='unicode')


def test_a_libvirt_that_drops_reconnect_is_warned_about_once(caplog):
    driver = driver_with(OldLibvirtDomain(DOMAIN % ''))
    driver.attach_swap_disk('u', '/s.sock', 'e', SERIAL, reconnect_delay=30)
    xml = driver._conn.dom.calls[0][1]
    assert ElementTree.fromstring(xml).find('source/reconnect') is not None
    warned = [r for r in caplog.records if 'reconnect' in r.getMessage()]
    assert len(warned) == 1
    assert 'libvirt 9.0.0' in warned[0].getMessage()
    driver._conn.dom = OldLibvirtDomain(DOMAIN % '')
    driver.attach_swap_disk('u', '/s.sock', 'e', SERIAL, reconnect_delay=30)
    assert len([r for r in caplog.records
                if 'reconnect' in r.getMessage()]) == 1


def test_a_libvirt_that_keeps_reconnect_is_not_warned_about(caplog):
    class NewLibvirtDomain(Domain):
        def attachDeviceFlags(self, xml, flags):
            super().attachDeviceFlags(xml, flags)
            self.live = DOMAIN % xml

    driver = driver_with(NewLibvirtDomain(DOMAIN % ''))
    driver.attach_swap_disk('u', '/s.sock', 'e', SERIAL, reconnect_delay=30)
    assert not [r for r in caplog.records if 'reconnect' in r.getMessage()]


class PausedDomain(Domain):
    """A domain paused (or not) with I/O errors on some disks."""

    def __init__(self, live, state, errors):
        super().__init__(live)
        self._state = state
        self.errors = errors
        self.resumed = 0

    def state(self):
        return self._state

    def diskErrors(self):
        return dict(self.errors)

    def resume(self):
        self.resumed += 1

    def UUIDString(self):
        return TEST_DOMAIN_UUID


IOERROR = (libvirt.VIR_DOMAIN_PAUSED, libvirt.VIR_DOMAIN_PAUSED_IOERROR)
SWAP_DISK = libvirt_driver.swap_disk_xml('/s.sock', 'e', SERIAL, 'vdb')


@pytest.mark.parametrize('state, errors, resumed', [
    # Paused on its swap disk's error: resumed.
    (IOERROR, {'vdb': libvirt.VIR_DOMAIN_DISK_ERROR_UNSPEC}, True),
    # Its root disk failed too: not memagg's to clear.
    (IOERROR, {'vdb': libvirt.VIR_DOMAIN_DISK_ERROR_UNSPEC,
               'vda': libvirt.VIR_DOMAIN_DISK_ERROR_UNSPEC}, False),
    # Paused by the operator, or running.
    ((libvirt.VIR_DOMAIN_PAUSED, libvirt.VIR_DOMAIN_PAUSED_USER), {}, False),
    ((libvirt.VIR_DOMAIN_RUNNING, 1), {}, False),
    # Paused on an error that is gone from the disks' status.
    (IOERROR, {}, False),
    # Out of space: it would pause again at once.
    (IOERROR, {'vdb': libvirt.VIR_DOMAIN_DISK_ERROR_NO_SPACE}, False),
])
def test_resume_after_swap_error_only_for_errors_of_memagg_disks(
        state, errors, resumed):
    dom = PausedDomain(DOMAIN % (FILE_DISK % 'vda' + SWAP_DISK), state,
                       errors)
    assert driver_with(dom).resume_after_swap_error('u', [SERIAL]) is resumed
    assert dom.resumed == int(resumed)


def test_a_vm_paused_on_a_full_disk_is_logged_once(caplog):
    dom = PausedDomain(DOMAIN % SWAP_DISK, IOERROR,
                       {'vdb': libvirt.VIR_DOMAIN_DISK_ERROR_NO_SPACE})
    driver = driver_with(dom)
    assert driver.resume_after_swap_error('u', [SERIAL]) is False
    assert driver.resume_after_swap_error('u', [SERIAL]) is False
    assert len([r for r in caplog.records
                if 'out of space' in r.getMessage()]) == 1
    assert dom.resumed == 0
