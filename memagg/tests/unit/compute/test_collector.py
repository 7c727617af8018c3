"""The collector turns libvirt's view of the host into a ComputeReport."""
import pytest

from memagg.compute import collector
from memagg.drivers.hypervisor import base
from memagg.drivers.hypervisor import libvirt_driver

TEST_DOMAIN_UUID = '6695eb01-f6a4-8304-79aa-97f2502e193f'


@pytest.fixture
def driver():
    drv = libvirt_driver.LibvirtDriver('test:///default')
    yield drv
    drv.close()


@pytest.mark.parametrize('stats, expected', [
    ({'available': 2097152, 'usable': 1048576, 'unused': 1572864}, 1024),
    ({'available': 2097152, 'unused': 524288}, 1536),
    ({'available': 1024, 'usable': 4096}, 0),
    ({'actual': 2097152}, None),
    ({}, None),
])
def test_balloon_wss(stats, expected):
    assert collector.balloon_wss_mb(stats) == expected


def test_report_of_the_libvirt_test_host(conf, driver):
    conf.config(reserved_host_memory_mb=256, group='compute')
    report = collector.Collector(driver, 'node-a').collect()
    assert report.host == 'node-a'
    assert (report.memory_mb, report.vcpus, report.reserved_mb) == (
        3072, 16, 256)
    assert report.lendable_mb == 0
    inst = {i.uuid: i for i in report.instances}[TEST_DOMAIN_UUID]
    assert (inst.name, inst.booked_mb, inst.current_mb) == ('test', 8192, 2048)
    # test:///default's balloon: available 2 GiB, usable 1 GiB.
    assert (inst.wss_mb, inst.estimator) == (1024, 'libvirt_stats')
    sample = {s.instance_uuid: s for s in report.samples}[TEST_DOMAIN_UUID]
    assert (sample.wss_mb, sample.current_mb) == (1024, 2048)
    assert sample.sampled_at == report.reported_at


class _Driver(base.HypervisorDriver):
    """A hypervisor whose counters the test moves."""

    def __init__(self):
        self.busy, self.total, self.guest_cpu = 0, 0, 0
        self.stats = {}

    def get_host_info(self):
        return base.HostInfo('h', 1024, 512, 2, self.busy, self.total)

    def list_domains(self):
        return [base.DomainInfo(TEST_DOMAIN_UUID, 'vm', 512, 256, 1,
                                self.guest_cpu, dict(self.stats))]


def test_cpu_util_is_the_fraction_since_the_last_collection():
    drv = _Driver()
    coll = collector.Collector(drv, 'h')
    first = coll.collect()
    assert first.cpu_util == 0.0 and first.instances[0].cpu_util == 0.0
    drv.busy, drv.total = 300, 1000
    second = coll.collect()
    assert second.cpu_util == pytest.approx(0.3)
    assert 0.0 <= second.instances[0].cpu_util <= 1.0


def test_a_guest_without_balloon_stats_has_no_wss_and_no_sample():
    report = collector.Collector(_Driver(), 'h').collect()
    assert report.instances[0].wss_mb is None
    assert report.instances[0].estimator is None
    assert report.instances[0].current_mb == 256
    assert report.samples == []
