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

"""[compute] mode = observe: memagg-compute measures and reports, and
changes nothing.

The periods run on libvirt's test:///default host (its domain 'test' is
booked 8 GiB and ballooned to 2 GiB: a VM found ballooned), on
test_memory's in-test driver where the test needs a policy that would
move a balloon or host reclaim that would run, and RemoteMemory on
remote_fixtures' memagg-swapd and scheduler (no memagg-swapd here).
"""
import logging

import pytest

from memagg.common import exceptions
from memagg.compute import collector
from memagg.compute import manager as compute_manager
from memagg.compute import memory
from memagg.conf import CONF
from memagg.drivers.hypervisor import libvirt_driver
from memagg.tests.unit.compute import remote_fixtures as helpers
from memagg.tests.unit.compute import test_memory

TEST_DOMAIN_UUID = '6695eb01-f6a4-8304-79aa-97f2502e193f'
LEFT = 'balloon left at'


@pytest.fixture
def observe(conf):
    conf.config(mode='observe', group='compute')
    return conf


@pytest.fixture
def driver():
    drv = libvirt_driver.LibvirtDriver('test:///default')
    yield drv
    drv.close()


class Reports:
    """SchedulerAPI's report and remote-memory calls, recorded."""

    def __init__(self):
        self.reports = []
        self.calls = []

    def report(self, ctxt, report):
        self.reports.append(report)

    def __getattr__(self, name):
        def call(*args, **kwargs):
            self.calls.append(name)
        return call


def _domain_memory_mb(drv):
    return {d.uuid: d.current_memory_mb for d in drv.list_domains()}


def test_the_manager_reports_wss_and_cpu_and_moves_no_balloon(
        observe, driver, fake_rpc, tmp_path, caplog):
    observe.config(state_dir=str(tmp_path / 'state'), group='swapd')
    before = _domain_memory_mb(driver)
    manager = compute_manager.ComputeManager(
        host='node-a', driver=driver, swapd_client=helpers.FakeSwapd())
    manager.scheduler_api = manager.remote.scheduler_api = Reports()
    caplog.set_level(logging.INFO, logger='memagg.compute.memory')
    for _ in range(3):
        manager.collect_and_report()
    reports = manager.scheduler_api.reports
    assert len(reports) == 3
    # The balloon is where the test host has it (2 of 8 GiB), where manage
    # mode's cmms moves it to 1536 MiB in the first period
    # (test_collector).
    assert _domain_memory_mb(driver) == before == {TEST_DOMAIN_UUID: 2048}
    for report in reports:
        inst = {i.uuid: i for i in report.instances}[TEST_DOMAIN_UUID]
        assert (inst.wss_mb, inst.estimator) == (1088, 'badis/V/stats')
        assert (inst.local_policy, inst.target_mb) == ('observe', None)
        assert inst.current_mb == 2048 and inst.vcpus > 0
        assert inst.cpu_util is not None
        sample, = report.samples
        assert (sample.wss_mb, sample.target_mb) == (1088, None)
        assert sample.cpu_util is not None
        # The reservoir is what the balloon leaves where it is.
        assert report.free_reservoir_mb == 3072 - 512 - 2048
        assert report.lendable_mb == 0
    assert manager.scheduler_api.calls == []
    # Said once for the VM found ballooned, not every period.
    left = [r.getMessage() for r in caplog.records if LEFT in r.getMessage()]
    assert left == ['VM %s: balloon left at 2048 of 8192 MiB ([compute] '
                    'mode = observe moves no balloon)' % TEST_DOMAIN_UUID]


def test_a_vm_found_ballooned_again_after_it_left_is_said_again(
        observe, caplog):
    drv = test_memory.Driver()
    drv.add('vm-a', test_memory.stats_of(300, m_cur_mb=1024), max_mb=2048)
    manager = memory.MemoryManager(drv, CONF)
    caplog.set_level(logging.INFO, logger='memagg.compute.memory')
    test_memory.run(manager, drv, 0)
    test_memory.run(manager, drv, 1)
    del drv.domains['vm-a']
    test_memory.run(manager, drv, 2)
    drv.add('vm-a', test_memory.stats_of(300, m_cur_mb=1024), max_mb=2048)
    test_memory.run(manager, drv, 3)
    assert sum(LEFT in r.getMessage() for r in caplog.records) == 2
    assert drv.balloons == []


@pytest.mark.parametrize('mode, moved', [('manage', True),
                                         ('observe', False)])
def test_only_manage_mode_moves_a_balloon_the_policy_would_move(
        conf, mode, moved):
    conf.config(estimator='stats', group='wss')
    conf.config(reserved_host_memory_mb=0, mode=mode, group='compute')
    drv = test_memory.Driver()
    # Full size and using 300 MiB: cmms lowers it toward its WSS.
    drv.add('vm-a', test_memory.stats_of(300, m_cur_mb=2048), max_mb=2048)
    drv.add('vm-b', test_memory.stats_of(100, m_cur_mb=1024), max_mb=1024)
    manager = memory.MemoryManager(drv, CONF)
    period = test_memory.run(manager, drv)
    assert bool(drv.balloons) is moved
    results = period.vms
    assert results['vm-a'].wss_mb == 300 and results['vm-b'].wss_mb == 100
    if moved:
        assert results['vm-a'].target_mb < 2048
    else:
        assert [r.target_mb for r in results.values()] == [None, None]
        assert {r.local_policy for r in results.values()} == {'observe'}
        assert period.reservoir_mb == test_memory.HOST_MB - 2048 - 1024


@pytest.mark.parametrize('mode, reclaims', [('manage', True),
                                            ('observe', False)])
def test_host_reclaim_runs_in_manage_mode_only(conf, mode, reclaims,
                                               monkeypatch):
    conf.config(estimator='stats', group='wss')
    conf.config(reserved_host_memory_mb=0, mode=mode, group='compute')
    conf.config(controller='senpai', group='host_reclaim')
    drv = test_memory.Driver()
    drv.add('vm-a', test_memory.stats_of(300, m_cur_mb=1024), max_mb=1024)
    manager = memory.MemoryManager(drv, CONF)
    assert manager.reclaim.enabled
    asked = []
    monkeypatch.setattr(manager.reclaim, 'period',
                        lambda uuid, *args, **kwargs: asked.append(uuid))
    period = test_memory.run(manager, drv)
    assert asked == (['vm-a'] if reclaims else [])
    assert period.vms['vm-a'].wss_mb == 300


def test_remote_memory_asks_lends_and_releases_nothing(observe, lmc):
    lmc.client.stats = helpers.donor(capacity_mb=4096, used_mb=512)
    observe.config(mode='manage', group='compute')
    lmc.attach_grant(helpers.grant_dict())
    observe.config(mode='observe', group='compute')
    short = helpers.period(5000, helpers.result(helpers.VM2, 1500, 1200))
    # VM2 is short with no grant; VM (with the grant) is gone two periods:
    # manage mode would ask for VM2's grant, reclaim what is lent beyond
    # the lendable memory and release VM's grant (test_remote).
    for _ in range(2):
        assert lmc.plan_period(short, [helpers.dom(helpers.VM2)]) == 0
        lmc.act(None)
    assert lmc.lendable_mb == 0
    assert lmc.scheduler_api.calls == []
    assert helpers.VM in lmc.grants_by_instance()
    assert not [c for c in lmc.client.calls if c[0] == 'export_drop']


def test_the_scheduler_s_grant_calls_are_refused(observe, lmc):
    for call in (lambda: lmc.prepare_slabs(helpers.GRANT, helpers.SECRET, 64,
                                           [0]),
                 lambda: lmc.attach_grant(helpers.grant_dict())):
        with pytest.raises(exceptions.Conflict) as info:
            call()
        assert '[compute] mode = observe' in str(info.value)
    assert lmc.client.calls == [] and lmc.driver.attached == []


def test_a_status_read_shows_the_observed_period(observe, driver):
    coll = collector.Collector(driver, 'node-a',
                               memory.MemoryManager(driver, CONF))
    coll.run_period()
    status = coll.collect()
    inst, = status.instances
    assert (inst.local_policy, inst.target_mb, inst.wss_mb) == (
        'observe', None, 1088)
