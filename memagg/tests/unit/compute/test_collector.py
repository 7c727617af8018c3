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

"""The collector turns libvirt's view of the host and the memory manager's
period into a ComputeReport."""
import pytest

from memagg.common import exceptions
from memagg.compute import collector
from memagg.compute import memory
from memagg.compute import reclaim
from memagg.conf import CONF
from memagg.drivers.hypervisor import base
from memagg.drivers.hypervisor import libvirt_driver

TEST_DOMAIN_UUID = '6695eb01-f6a4-8304-79aa-97f2502e193f'


@pytest.fixture
def driver():
    drv = libvirt_driver.LibvirtDriver('test:///default')
    yield drv
    drv.close()


def test_a_period_of_the_libvirt_test_host(conf, driver):
    conf.config(reserved_host_memory_mb=256, group='compute')
    coll = collector.Collector(driver, 'node-a',
                               memory.MemoryManager(driver, CONF))
    before = coll.collect()
    assert before.instances[0].wss_mb is None and before.samples == []
    report = coll.run_period()
    assert report.host == 'node-a'
    assert (report.memory_mb, report.vcpus, report.reserved_mb) == (
        3072, 16, 256)
    assert report.lendable_mb == 0
    inst = {i.uuid: i for i in report.instances}[TEST_DOMAIN_UUID]
    assert (inst.name, inst.booked_mb, inst.current_mb) == ('test', 8192, 2048)
    # No sampler on test:///default: Badis uses the guest's used memory
    # (available 2 GiB - usable 1 GiB) plus its 64 MiB margin.
    assert (inst.wss_mb, inst.estimator) == (1088, 'badis/V/stats')
    assert inst.local_policy == 'cmms/equal'
    # cmms shrinks toward the WSS, at most max_step_mb (512) a period.
    assert inst.target_mb == 1536
    assert report.free_reservoir_mb == 3072 - 256 - 1536
    sample = {s.instance_uuid: s for s in report.samples}[TEST_DOMAIN_UUID]
    assert (sample.wss_mb, sample.current_mb, sample.target_mb) == (
        1088, 2048, 1536)
    assert sample.sampled_at == report.reported_at
    # A status read shows the last period without adding samples.
    status = coll.collect()
    assert status.samples == []
    assert status.instances[0].current_mb == 1536
    assert status.instances[0].target_mb == 1536


@pytest.mark.parametrize('pattern,names', [
    ('', ['test']), ('te', ['test']), ('instance-', []), ('est', [])])
def test_only_the_domains_the_regex_matches_are_managed(
        conf, driver, pattern, names):
    conf.config(domain_name_regex=pattern, group='compute')
    coll = collector.Collector(driver, 'node-a',
                               memory.MemoryManager(driver, CONF))
    period = coll.run_period()
    assert [i.name for i in period.instances] == names
    assert [s.instance_uuid for s in period.samples] == (
        [TEST_DOMAIN_UUID] if names else [])
    assert [i.name for i in coll.collect().instances] == names


def test_a_bad_domain_regex_names_the_option(conf, driver):
    conf.config(domain_name_regex='instance-(', group='compute')
    with pytest.raises(exceptions.InvalidParameter) as error:
        collector.Collector(driver, 'node-a',
                            memory.MemoryManager(driver, CONF))
    assert '[compute] domain_name_regex' in str(error.value)
    assert 'not a regular expression' in str(error.value)


class _Driver(base.HypervisorDriver):
    """A hypervisor whose counters the test moves."""

    def __init__(self, stats=None, balloon=True):
        self.busy, self.total, self.guest_cpu = 0, 0, 0
        self.stats = stats or {}
        self.balloon = balloon
        self.moves = []

    def get_host_info(self):
        return base.HostInfo('h', 4096, 2048, 2, self.busy, self.total)

    def list_domains(self):
        return [base.DomainInfo(TEST_DOMAIN_UUID, 'vm', 512, 256, 1,
                                self.guest_cpu, dict(self.stats),
                                balloon=self.balloon, stats_period=5)]

    def set_balloon(self, uuid, target_mb):
        self.moves.append((uuid, target_mb))


def _collector(drv):
    return collector.Collector(drv, 'h', memory.MemoryManager(drv, CONF))


def test_cpu_util_is_the_fraction_since_the_last_collection():
    drv = _Driver()
    coll = _collector(drv)
    first = coll.collect()
    assert first.cpu_util == 0.0 and first.instances[0].cpu_util == 0.0
    drv.busy, drv.total = 300, 1000
    second = coll.collect()
    assert second.cpu_util == pytest.approx(0.3)
    assert 0.0 <= second.instances[0].cpu_util <= 1.0


@pytest.mark.parametrize('stats, balloon, reason', [
    ({}, True, 'no balloon statistics'),
    ({'actual': 262144}, True, 'no balloon statistics'),
    ({}, False, 'no balloon device'),
])
def test_a_guest_without_balloon_or_stats_is_marked_and_left_alone(
        stats, balloon, reason):
    drv = _Driver(stats, balloon)
    report = _collector(drv).run_period()
    inst = report.instances[0]
    assert inst.wss_mb is None and inst.target_mb is None
    assert inst.estimator == 'unmanaged: %s' % reason
    assert inst.local_policy is None
    assert inst.current_mb == 256
    assert report.samples == []
    assert drv.moves == []
    # Its memory is taken: the reservoir is what is left.
    assert report.free_reservoir_mb == 4096 - 512 - 256


@pytest.mark.parametrize('group, option, value', [
    ('local_policy', 'policy', 'nosuch'),
    ('wss', 'estimator', 'nosuch'),
    ('local_policy', 'weights', 'gold:-1'),
])
def test_invalid_policy_or_estimator_options_fail_at_start(
        conf, group, option, value):
    conf.config(**{option: value, 'group': group})
    with pytest.raises(exceptions.InvalidParameter) as info:
        memory.MemoryManager(_Driver(), CONF)
    assert '[%s] %s' % (group, option) in str(info.value)


class _TwoVcpuDriver(_Driver):
    def list_domains(self):
        return [base.DomainInfo(TEST_DOMAIN_UUID, 'vm', 512, 256, 2,
                                self.guest_cpu, dict(self.stats),
                                balloon=self.balloon, stats_period=5)]


def test_samples_carry_cpu_in_cores_and_the_report_memory_in_use():
    drv = _TwoVcpuDriver({'actual': 262144, 'available': 262144,
                          'usable': 131072})
    coll = _collector(drv)
    coll.run_period()
    # More guest CPU time than the wall time passed: the guest used both
    # vCPUs for the whole period.
    drv.guest_cpu = 10 ** 18
    report = coll.run_period()
    inst = report.instances[0]
    assert (inst.cpu_util, inst.vcpus) == (1.0, 2)
    assert report.samples[0].cpu_util == 2.0
    assert inst.wss_mb is not None
    assert report.mem_used_mb == (inst.wss_maxavg_mb or inst.wss_mb)
    assert report.host_sample() == {'cpu_util': report.cpu_util,
                                    'mem_used_mb': report.mem_used_mb}


class _SampledMemory:
    """A MemoryManager whose period gave one VM a sampled, warming
    estimate."""

    def run_period(self, host_info, domains, now, ghosts=None):
        return memory.PeriodResult(vms={TEST_DOMAIN_UUID: memory.VmResult(
            uuid=TEST_DOMAIN_UUID, current_mb=256, wss_mb=40,
            wss_maxavg_mb=None, target_mb=256, estimator='badis/V/sampler',
            local_policy='cmms/equal', sampler_backend='damon_paddr',
            sampler_error_mb=0.8, sampler_pages=4610, warming=True)},
            reservoir_mb=1024)


def test_the_sampler_behind_an_estimate_reaches_the_report():
    drv = _Driver({'actual': 262144, 'available': 262144})
    coll = collector.Collector(drv, 'h', _SampledMemory())
    before = coll.collect()
    report = coll.run_period()

    sampler = dict(sampler_backend='damon_paddr', sampler_error_mb=0.8,
                   sampler_pages=4610, warming=True)
    for item in (report.instances[0], report.samples[0]):
        assert {k: getattr(item, k) for k in sampler} == sampler
    # Before any period the VM has no sampler values to report: its row
    # keeps what it had.
    assert not set(sampler) & set(before.instances[0].as_dict())


class _ReclaimedMemory:
    """A MemoryManager whose period reclaimed 300 MiB of one unmanaged VM
    through madvise (``reclaim``), or ran no controller (None)."""

    def __init__(self, reclaim):
        self.reclaim = reclaim

    def run_period(self, host_info, domains, now, ghosts=None):
        return memory.PeriodResult(vms={TEST_DOMAIN_UUID: memory.VmResult(
            uuid=TEST_DOMAIN_UUID, current_mb=2048, wss_mb=500,
            wss_maxavg_mb=512, estimator='unmanaged: no balloon device',
            managed=False, reclaim=self.reclaim)}, reservoir_mb=300)


def test_host_reclaim_reaches_the_report():
    drv = _Driver({'actual': 2048 * 1024, 'available': 2048 * 1024})
    held = reclaim.VmReclaim(reclaimed_mb=299.7, promotions_per_min=65.536,
                             slo_per_min=262.144, mechanism='madvise')
    report = collector.Collector(drv, 'h', _ReclaimedMemory(held)).run_period()

    inst, = report.instances
    sample, = report.samples
    assert (inst.reclaimed_mb, inst.promotion_rate, inst.promotion_slo,
            inst.reclaim_mechanism) == (300, 65.536, 262.144, 'madvise')
    # 65.536 pages a minute of a 512 MiB WSS^maxavg: 0.05 % of it.
    assert inst.promotion_rate_pct == pytest.approx(0.05)
    assert (sample.reclaimed_mb, sample.promotion_rate) == (300, 65.536)
    assert not {'promotion_slo', 'reclaim_mechanism'} & set(
        sample.as_dict())
    assert report.free_reservoir_mb == 300


@pytest.mark.parametrize('held, mechanism', [
    (None, 'none: host reclaim off ([host_reclaim] controller = none)'),
    (reclaim.VmReclaim(mechanism=None, reason='no reclaim mechanism: x'),
     'none: no reclaim mechanism: x'),
    (reclaim.VmReclaim(mechanism='madvise', reason='no swap space'),
     'madvise: no swap space'),
])
def test_the_mechanism_says_why_nothing_is_reclaimed(held, mechanism):
    drv = _Driver({'actual': 2048 * 1024, 'available': 2048 * 1024})
    inst, = collector.Collector(drv, 'h', _ReclaimedMemory(held)).run_period(
    ).instances
    assert inst.reclaim_mechanism == mechanism
    assert (inst.reclaimed_mb, inst.promotion_rate,
            inst.promotion_rate_pct, inst.promotion_slo) == (0, None, None,
                                                             None)
