"""The libvirt hypervisor driver against libvirt's test:///default driver."""
import libvirt
import pytest

from memagg.common import exceptions

from memagg.drivers.hypervisor import base
from memagg.drivers.hypervisor import libvirt_driver

TEST_URI = 'test:///default'
# The domain every test:///default connection starts with.
TEST_DOMAIN_UUID = '6695eb01-f6a4-8304-79aa-97f2502e193f'

TRANSIENT_XML = """<domain type='test'>
  <name>%(name)s</name>
  <memory unit='MiB'>256</memory>
  <currentMemory unit='MiB'>128</currentMemory>
  <vcpu>1</vcpu>
  <os><type>hvm</type></os>
</domain>"""


@pytest.fixture
def driver():
    drv = base.load('libvirt', TEST_URI)
    yield drv
    drv.close()


def test_stevedore_loads_the_libvirt_driver(driver):
    assert isinstance(driver, libvirt_driver.LibvirtDriver)
    assert driver.uri == TEST_URI


def test_an_unknown_driver_name_is_refused_naming_the_option():
    with pytest.raises(exceptions.InvalidParameter) as info:
        base.load('nosuch', TEST_URI)
    assert str(info.value) == (
        "Invalid value for '[compute] hypervisor_driver': no hypervisor "
        "driver 'nosuch'; use one of libvirt")


def test_host_info(driver):
    info = driver.get_host_info()
    # test:///default describes a 16-CPU host with 3 GiB of memory.
    assert info.memory_mb == 3072
    assert info.vcpus == 16
    assert info.free_memory_mb >= 0
    assert info.cpu_total_ns >= info.cpu_busy_ns > 0


def test_list_domains_reads_sizes_and_balloon_stats(driver):
    domains = {d.uuid: d for d in driver.list_domains()}
    dom = domains[TEST_DOMAIN_UUID]
    assert dom.name == 'test'
    assert (dom.max_memory_mb, dom.current_memory_mb) == (8192, 2048)
    assert dom.vcpus == 2
    assert dom.memory_stats['available'] == 2048 * 1024


def test_a_domain_vanishing_mid_read_is_skipped(driver):
    conn = driver._connection()
    doomed = conn.createXML(TRANSIENT_XML % {'name': 'doomed'})
    doomed_uuid = doomed.UUIDString()
    real_list = conn.listAllDomains

    def list_then_destroy(flags=0):
        domains = real_list(flags)
        assert doomed_uuid in [d.UUIDString() for d in domains]
        doomed.destroy()  # transient: gone for good before it is read
        return domains

    conn.listAllDomains = list_then_destroy
    uuids = [d.uuid for d in driver.list_domains()]
    assert doomed_uuid not in uuids
    assert TEST_DOMAIN_UUID in uuids


def test_reconnects_when_the_connection_died(driver):
    first = driver._connection()
    driver.list_domains()
    # What libvirtd restarting looks like from here: the connection is dead.
    first.close()
    domains = driver.list_domains()
    assert TEST_DOMAIN_UUID in [d.uuid for d in domains]
    assert driver._conn is not first


def test_an_unreachable_uri_raises_libvirt_error():
    drv = libvirt_driver.LibvirtDriver(
        'qemu+unix:///system?socket=/nonexistent')
    with pytest.raises(libvirt.libvirtError):
        drv.get_host_info()
