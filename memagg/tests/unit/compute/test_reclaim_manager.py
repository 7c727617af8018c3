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

"""MemoryManager with host reclaim on, against a real process standing in
for QEMU (the hot child: 256 MiB, 64 MiB hot, no balloon device), the real
native sampler and page-out, and a swap file added for the test. The
hypervisor is test_memory's in-test driver pointing at that process: the
process is real, only libvirt is left out (the real-guest test is
memagg/tests/functional/test_guest_host_reclaim.py)."""
import datetime
import functools
import subprocess
import sys

import pytest

from memagg.compute import memory
from memagg.compute import reclaim
from memagg.conf import CONF
from memagg.drivers.compute_api import base as compute_api
from memagg.drivers.hypervisor import base
from memagg.tests import host_swap
from memagg.tests.unit.compute import test_memory
from memagg.tests.unit.native import test_page_out
from memagg.tests.unit.native import test_sampler

# The host lane (memagg/tests/lanes.py): DAMON, and a swap file on the host.
pytestmark = pytest.mark.host

MIB = 1 << 20
hot_child = test_page_out.hot_child


class ProcessDriver(test_memory.Driver):
    """test_memory's driver whose VM's guest RAM is a real process's."""

    def __init__(self, child):
        super().__init__()
        self.child = child

    def guest_memory(self, uuid):
        self._check('guest_memory', uuid)
        return base.GuestMemory(pid=self.child.pid, start=self.child.addr,
                                length=self.child.length, method='test')


class Settings(compute_api.ComputeApi):
    """memagg:host_reclaim per VM, as Nova would read it from a flavor."""

    name = 'settings'

    def __init__(self, values):
        super().__init__(None)
        self.values = values

    def get_vm_setting(self, instance_uuid, key):
        assert key == compute_api.HOST_RECLAIM_KEY
        value = self.values.get(instance_uuid)
        if value is None:
            return compute_api.NO_WEIGHT
        return compute_api.QosWeight(value, compute_api.FLAVOR)


@pytest.fixture
def reclaim_conf(conf):
    conf.config(controller='senpai', cold_age_s=1.0, grow_mb=64,
                group='host_reclaim')
    conf.config(sampler_backend='damon_paddr', sampler_pages=4000,
                sampler_error=0.0, group='wss')
    conf.config(reserved_host_memory_mb=0, group='compute')
    return CONF


def _periods(manager, driver, child, count):
    results = []
    for i in range(count):
        now = test_memory.START + datetime.timedelta(seconds=10 * i)
        results.append(manager.run_period(driver.get_host_info(),
                                          driver.list_domains(), now))
        # A window spans two whole passes over the hot set.
        child.wait_passes(2)
    return results


@test_sampler.needs_root
@pytest.mark.slow
def test_a_vm_without_balloon_gives_its_cold_memory_to_swap(reclaim_conf,
                                                            hot_child):
    driver = ProcessDriver(hot_child)
    driver.add('vm', {}, max_mb=256, balloon=False, current_mb=256)
    manager = memory.MemoryManager(driver, reclaim_conf)
    try:
        assert manager.reclaim.needs_idle_pages
        hot_child.wait_passes(1)
        before = host_swap.rss_mb(hot_child.pid)
        with host_swap.swap_file(512):
            results = _periods(manager, driver, hot_child, 6)
            after = host_swap.rss_mb(hot_child.pid)
            last = results[-1].vms['vm']
    finally:
        manager.close()
    assert not last.managed and last.estimator.startswith('unmanaged')
    # The sampler's WSS is the hot set (64 MiB of 256).
    assert last.wss_maxavg_mb == pytest.approx(64, abs=12)
    r = last.reclaim
    assert r.mechanism == 'madvise' and r.reason is None
    # At least half the 192 MiB cold gone from RSS, and into swap.
    assert before - after >= 96, (before, after)
    assert r.reclaimed_mb >= 96
    # What it holds in swap is freed in the node's reservoir, as what a
    # balloon holds is (to the nearest MiB).
    assert results[-1].reservoir_mb == memory.guest_memory_mb(
        reclaim_conf, driver.get_host_info()) - 256 + round(r.reclaimed_mb)
    # The hot set stayed resident: promotions within the SLO.
    assert r.promotions_per_min <= r.slo_per_min
    # It grew by grow_mb a period and no faster.
    limits = [p.vms['vm'].reclaim.limit_mb for p in results]
    assert all(b - a <= 64 for a, b in zip(limits, limits[1:])), limits


@test_sampler.needs_root
@pytest.mark.slow
def test_opt_out_and_no_swap_page_nothing_out(reclaim_conf, hot_child,
                                              tmp_path):
    driver = ProcessDriver(hot_child)
    driver.add('out', {}, max_mb=256, balloon=False, current_mb=256)
    manager = memory.MemoryManager(driver, reclaim_conf)
    manager.reclaim_settings.api = Settings({'out': 'false'})
    try:
        results = _periods(manager, driver, hot_child, 4)
    finally:
        manager.close()
    assert results[-1].vms['out'].reclaim.reason == \
        'opted out (memagg:host_reclaim=false)'
    assert reclaim.process_counters(hot_child.pid)[0] == 0

    driver.domains.clear()
    driver.add('in', {}, max_mb=256, balloon=False, current_mb=256)
    manager = memory.MemoryManager(driver, reclaim_conf)
    # The host may have swap of its own (a CI machine had): the reader
    # gets a /proc/swaps that lists no device, as this machine's does.
    swaps = tmp_path / 'swaps'
    swaps.write_text('Filename\tType\tSize\tUsed\tPriority\n')
    manager.reclaim._swap_reason = functools.partial(
        reclaim.mechanism_base.host_swap_reason, swaps=str(swaps))
    try:
        results = _periods(manager, driver, hot_child, 4)
    finally:
        manager.close()
    assert 'no swap space' in results[-1].vms['in'].reclaim.reason
    assert reclaim.process_counters(hot_child.pid)[0] == 0


@test_sampler.needs_root
@pytest.mark.slow
def test_a_vm_gone_mid_reclaim_is_forgotten(reclaim_conf, tmp_path):
    passes = tmp_path / 'passes'
    passes.write_bytes(bytes(8))
    proc = subprocess.Popen([sys.executable, test_sampler.HOTSET, '64',
                             '16', str(passes)], stdout=subprocess.PIPE,
                            text=True)
    child = test_sampler.HotChild(proc, int(proc.stdout.readline()),
                                  64 * MIB, passes)
    driver = ProcessDriver(child)
    driver.add('vm', {}, max_mb=64, balloon=False, current_mb=64)
    manager = memory.MemoryManager(driver, reclaim_conf)
    try:
        first = test_memory.run(manager, driver)
        assert first.vms['vm'].reclaim.reason is None
        # QEMU dies between two periods: its sampler and its reclaim
        # find the process gone, and the VM is dropped, not raised.
        proc.kill()
        proc.wait()
        second = test_memory.run(manager, driver, period=1)
    finally:
        manager.close()
        proc.kill()
        proc.wait()
    assert 'vm' not in second.vms
    assert 'vm' not in manager._vms


class _Reclaimed:
    """A HostReclaim whose VMs hold ``held`` MiB each in the host's swap
    (the page-out itself is tested above on a real process)."""

    enabled = True
    needs_idle_pages = False

    def __init__(self, held):
        self.held = held

    def observe(self, uuid, idle_pages, accessed_pages, window_s):
        pass

    def period(self, uuid, memory_, sample_n, wss_maxavg_mb, moving,
               psi=None, setting=None):
        return reclaim.VmReclaim(reclaimed_mb=self.held[uuid],
                                 mechanism='madvise')

    def forget(self, uuid):
        pass


class _NoSettings:
    def weight(self, uuid):
        return None

    def forget(self, uuid):
        pass


def test_reclaimed_memory_counts_in_the_reservoir_as_ballooned(conf):
    """The node's reservoir grows by what host reclaim holds of a managed
    and of an unmanaged VM, as it grows by what a balloon frees."""
    conf.config(estimator='stats', group='wss')
    conf.config(reserved_host_memory_mb=0, group='compute')
    driver = test_memory.Driver()
    driver.add('managed', test_memory.stats_of(300, m_cur_mb=1024))
    driver.add('unmanaged', {}, max_mb=1024, balloon=False, current_mb=1024)

    def reservoir(held):
        manager = memory.MemoryManager(driver, CONF)
        if held is not None:
            manager.reclaim = _Reclaimed(held)
            manager.reclaim_settings = _NoSettings()
        try:
            return test_memory.run(manager, driver)
        finally:
            manager.close()

    alone = reservoir(None)
    both = reservoir({'managed': 100.4, 'unmanaged': 250.0})

    assert [alone.vms[u].target_mb for u in alone.vms] == [
        both.vms[u].target_mb for u in both.vms]
    assert both.reservoir_mb == alone.reservoir_mb + 350
    assert memory.reclaimed_mb(both.vms) == 350
