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

"""The libvirt hypervisor driver against libvirt's test:///default driver."""
import logging
import socket
from unittest import mock

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


def test_bulk_stats_read_as_dom_info_and_memory_stats():
    # One domain's record of connectGetAllDomainStats from QEMU (libvirt
    # 9.0, balloon statistics on).
    stats = {'cpu.time': 5071000000, 'cpu.user': 10000000,
             'cpu.system': 30000000, 'balloon.current': 131072,
             'balloon.maximum': 262144, 'balloon.swap_in': 0,
             'balloon.swap_out': 0, 'balloon.major_fault': 161,
             'balloon.minor_fault': 11802, 'balloon.unused': 82116,
             'balloon.available': 117020, 'balloon.usable': 79056,
             'balloon.last-update': 1764300000, 'balloon.disk_caches': 7228,
             'balloon.rss': 180224, 'vcpu.current': 1, 'vcpu.maximum': 1,
             'vcpu.0.state': 1, 'vcpu.0.time': 4800000000}
    max_kib, cur_kib, vcpus, cpu_ns, memory = (
        libvirt_driver.bulk_domain_values(stats))
    assert (max_kib, cur_kib, vcpus, cpu_ns) == (262144, 131072, 1,
                                                 5071000000)
    # memoryStats()'s names: 'actual' and 'last_update'; the maximum is
    # not one of its statistics.
    assert memory == {'actual': 131072, 'swap_in': 0, 'swap_out': 0,
                      'major_fault': 161, 'minor_fault': 11802,
                      'unused': 82116, 'available': 117020,
                      'usable': 79056, 'last_update': 1764300000,
                      'disk_caches': 7228, 'rss': 180224}
    # libvirt's test driver answers with the domain's state only.
    assert libvirt_driver.bulk_domain_values(
        {'state.state': 1, 'state.reason': 0}) is None


def test_the_balloon_device_is_read_once_per_run_of_a_domain(driver):
    conn = driver._connection()
    dom = conn.lookupByUUIDString(TEST_DOMAIN_UUID)
    reads = []
    real_xml = libvirt.virDomain.XMLDesc

    def counted(self, flags=0):
        reads.append(self.UUIDString())
        return real_xml(self, flags)

    with mock.patch.object(libvirt.virDomain, 'XMLDesc', counted):
        driver.list_domains()
        driver.list_domains()
        assert reads.count(TEST_DOMAIN_UUID) == 1
        # A new period is set through the driver: read again.
        driver.set_stats_period(TEST_DOMAIN_UUID, 5)
        stats_period = {d.uuid: d for d in driver.list_domains()}[
            TEST_DOMAIN_UUID].stats_period
        assert reads.count(TEST_DOMAIN_UUID) == 2
        # The domain restarted (a new id): read again.
        dom.destroy()
        dom.create()
        driver.list_domains()
        assert reads.count(TEST_DOMAIN_UUID) == 3
    assert stats_period == 5


def test_a_domain_vanishing_mid_read_is_skipped(driver):
    conn = driver._connection()
    doomed = conn.createXML(TRANSIENT_XML % {'name': 'doomed'})
    doomed_uuid = doomed.UUIDString()
    real_stats = conn.getAllDomainStats

    def list_then_destroy(stats=0, flags=0):
        records = real_stats(stats, flags)
        assert doomed_uuid in [d.UUIDString() for d, _ in records]
        doomed.destroy()  # transient: gone for good before it is read
        return records

    conn.getAllDomainStats = list_then_destroy
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


def test_an_unreachable_libvirtd_is_reported_as_unavailable():
    # libvirtd down or restarting: memagg's own error, naming the URI.
    uri = 'qemu+unix:///system?socket=/nonexistent'
    drv = libvirt_driver.LibvirtDriver(uri)
    with pytest.raises(base.HypervisorUnavailable) as info:
        drv.get_host_info()
    assert uri in str(info.value)
    with pytest.raises(base.HypervisorUnavailable):
        drv.list_domains()


def test_the_probe_tells_a_daemon_that_answers_from_one_that_does_not(
        tmp_path, caplog):
    assert libvirt_driver.answers('test:///default')
    absent = tmp_path / 'absent.sock'
    assert not libvirt_driver.answers(
        'qemu+unix:///system?socket=%s' % absent)
    # A socket that takes the connection and never answers, as a daemon
    # that does not serve its clients: libvirt's open would wait forever.
    path = str(tmp_path / 'silent.sock')
    with socket.socket(socket.AF_UNIX) as silent:
        silent.bind(path)
        silent.listen()
        with caplog.at_level(logging.WARNING):
            assert not libvirt_driver.answers(
                'qemu+unix:///system?socket=%s' % path, timeout=0.5)
    assert 'does not answer: no connection within 0 s' in caplog.text


def test_balloon_stats_period_and_guest_memory_on_the_test_driver(driver):
    driver.set_stats_period(TEST_DOMAIN_UUID, 2)
    driver.set_balloon(TEST_DOMAIN_UUID, 1024)
    dom = {d.uuid: d for d in driver.list_domains()}[TEST_DOMAIN_UUID]
    assert dom.balloon and dom.current_memory_mb == 1024
    # test:///default runs no QEMU process.
    with pytest.raises(base.Unsupported):
        driver.guest_memory(TEST_DOMAIN_UUID)


def test_a_vanished_domain_raises_domain_gone(driver):
    gone = '11111111-2222-3333-4444-555555555555'
    for call in (lambda: driver.set_balloon(gone, 512),
                 lambda: driver.set_stats_period(gone, 2),
                 lambda: driver.guest_memory(gone)):
        with pytest.raises(base.DomainGone):
            call()


class _Domain:
    """A domain whose completed job is ``stats`` (libvirt's typed
    parameters as libvirt-python returns them)."""

    def __init__(self, stats):
        self.stats = stats

    def jobStats(self, flags):
        assert flags == (libvirt.VIR_DOMAIN_JOB_STATS_COMPLETED
                         | libvirt.VIR_DOMAIN_JOB_STATS_KEEP_COMPLETED)
        return self.stats


def test_migration_stats_come_from_the_completed_migration_job():
    stats = libvirt_driver.job_stats_of_migration(_Domain({
        'type': libvirt.VIR_DOMAIN_JOB_COMPLETED,
        'operation': libvirt.VIR_DOMAIN_JOB_OPERATION_MIGRATION_IN,
        'time_elapsed': 1830, 'downtime': 41, 'data_processed': 9 << 20,
        'memory_processed': 8 << 20}))
    assert stats == base.MigrationStats(memory_bytes=8 << 20,
                                        data_bytes=9 << 20, time_ms=1830,
                                        downtime_ms=41)
    # Another job (a save, say), or none kept: no migration statistics.
    assert libvirt_driver.job_stats_of_migration(_Domain({
        'type': libvirt.VIR_DOMAIN_JOB_COMPLETED,
        'operation': libvirt.VIR_DOMAIN_JOB_OPERATION_SAVE})) is None
    assert libvirt_driver.job_stats_of_migration(_Domain({})) is None
