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

"""MemoryManager's period: stats rates, vanishing domains, refused
balloons, the budget and the reservoir.

The hypervisor is a small in-test driver implementing
memagg/drivers/hypervisor/base.py's HypervisorDriver, the contract the
manager is written against; the estimators and policies are the real
plug-ins loaded from the [wss] and [local_policy] options.
"""
import datetime
import logging

import pytest

from memagg.compute import memory
from memagg.compute import sampling
from memagg.conf import CONF
from memagg.drivers.hypervisor import base

HOST_MB = 4096
START = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)


def stats_of(used_mb, m_cur_mb=1024, **counters):
    """memoryStats (KiB) of a guest using ``used_mb`` of ``m_cur_mb``."""
    return dict(actual=m_cur_mb * 1024, available=m_cur_mb * 1024,
                usable=(m_cur_mb - used_mb) * 1024, **counters)


class Driver(base.HypervisorDriver):
    """A host whose domains the test sets and whose failures it chooses.

    ``gone``: {method name: set of uuids} for which that method raises
    DomainGone; ``unsupported``: the same for Unsupported.
    """

    def __init__(self):
        self.domains = {}
        self.gone = {}
        self.unsupported = {}
        self.balloons = []
        self.periods = []
        self.host_mb = HOST_MB

    def add(self, uuid, stats, max_mb=2048, balloon=True, current_mb=None):
        self.domains[uuid] = base.DomainInfo(
            uuid=uuid, name=uuid, max_memory_mb=max_mb,
            current_memory_mb=current_mb or stats.get('actual', 0) // 1024,
            vcpus=1, cpu_time_ns=0, memory_stats=stats, balloon=balloon)

    def _check(self, method, uuid):
        if uuid in self.gone.get(method, ()):
            raise base.DomainGone(uuid)
        if uuid in self.unsupported.get(method, ()):
            raise base.Unsupported('%s refused for %s' % (method, uuid))

    def get_host_info(self):
        return base.HostInfo('node', self.host_mb, self.host_mb, 2)

    def list_domains(self):
        return list(self.domains.values())

    def guest_memory(self, uuid):
        self._check('guest_memory', uuid)
        raise base.Unsupported('no guest memory in the test driver')

    def set_stats_period(self, uuid, seconds):
        self._check('set_stats_period', uuid)
        self.periods.append((uuid, seconds))

    def set_balloon(self, uuid, target_mb):
        self._check('set_balloon', uuid)
        self.balloons.append((uuid, target_mb))


@pytest.fixture
def stats_conf(conf):
    """The stats estimator (deterministic: the guest's used memory) and
    cmms with no reserved host memory."""
    conf.config(estimator='stats', group='wss')
    conf.config(reserved_host_memory_mb=0, group='compute')
    return conf


def run(manager, driver, period=0):
    now = START + datetime.timedelta(seconds=10 * period)
    return manager.run_period(driver.get_host_info(), driver.list_domains(),
                              now)


class TestStatsRates:

    def test_rates_are_the_deltas_per_second(self):
        before = {'swap_in': 100, 'swap_out': 40, 'major_fault': 7}
        after = {'swap_in': 400, 'swap_out': 40, 'major_fault': 27}
        assert memory.stats_rates(before, after, 10.0) == {
            'swap_in': 30.0, 'swap_out': 0.0, 'major_fault': 2.0}

    def test_a_counter_missing_on_either_side_is_left_out(self):
        rates = memory.stats_rates({'swap_in': 0, 'major_fault': 5},
                                   {'swap_in': 50, 'swap_out': 9}, 5.0)
        assert rates == {'swap_in': 10.0}

    @pytest.mark.parametrize('previous, elapsed', [
        (None, 10.0),           # first period
        ({'swap_in': 0}, 0.0),  # no time elapsed
        ({'swap_in': 0}, -1.0),
        ({'actual': 1}, 10.0),  # no counter at all
    ])
    def test_no_rates_without_a_previous_reading_or_time(self, previous,
                                                         elapsed):
        assert memory.stats_rates(previous, {'swap_in': 10},
                                  elapsed) is None

    def test_a_counter_reset_after_a_guest_reboot_gives_no_rates(self):
        # The guest rebooted: its swap_in restarted from zero while the
        # fault counter happens to be higher; a negative delta anywhere
        # means the counters are from a new boot.
        before = {'swap_in': 5000, 'major_fault': 10}
        after = {'swap_in': 20, 'major_fault': 900}
        assert memory.stats_rates(before, after, 10.0) is None

    def test_the_rates_reach_the_estimator_and_a_reset_clears_the_shortage(
            self, stats_conf):
        drv = Driver()
        manager = memory.MemoryManager(drv, CONF)
        shortages = []
        for swap_in in (1000, 3000, 10):
            drv.add('vm', stats_of(512, swap_in=swap_in))
            shortages.append(run(manager, drv).vms['vm'].shortage)
        # Swap-ins between the first two readings are a shortage; the
        # reset reading (reboot) is not a huge negative rate, just none.
        assert shortages == [False, True, False]


class TestSamplerWindows:

    def test_every_window_ends_before_any_begins_then_one_commit(
            self, conf, monkeypatch):
        # The damon_paddr samplers share one kdamond: one answer serves
        # every collect(), one restart every begin().
        conf.config(estimator='sampler', group='wss')
        conf.config(reserved_host_memory_mb=0, group='compute')
        calls = []
        monkeypatch.setattr(sampling.VmSampler, 'collect',
                            lambda vs, m_cur: calls.append(('end', vs.uuid)))
        monkeypatch.setattr(sampling.VmSampler, 'begin',
                            lambda vs: calls.append(('begin', vs.uuid)))
        monkeypatch.setattr(sampling, 'commit_windows',
                            lambda: calls.append(('commit',)))
        drv = Driver()
        for uuid in ('a', 'b', 'c'):
            drv.add(uuid, stats_of(600))
        manager = memory.MemoryManager(drv, CONF)
        for period in range(2):
            run(manager, drv, period)
        assert calls == 2 * [('end', 'a'), ('end', 'b'), ('end', 'c'),
                             ('begin', 'a'), ('begin', 'b'), ('begin', 'c'),
                             ('commit',)]


class TestVanishingDomains:

    @pytest.mark.parametrize('method', ['set_stats_period', 'guest_memory'])
    def test_gone_while_observed_is_skipped_and_others_go_on(
            self, conf, method):
        # The sampler estimator asks for the guest's RAM every period;
        # the stats period is set on first sight: both meet the driver.
        conf.config(estimator='sampler', group='wss')
        conf.config(reserved_host_memory_mb=0, group='compute')
        drv = Driver()
        drv.add('gone', stats_of(600))
        drv.add('stays', stats_of(600))
        drv.gone[method] = {'gone'}
        manager = memory.MemoryManager(drv, CONF)
        result = run(manager, drv)
        assert set(result.vms) == {'stays'}
        stays = result.vms['stays']
        # No sample yet (the window opens this period): no estimate, and
        # cmms keeps the VM where it is.
        assert stays.managed and stays.target_mb == 1024
        # The vanished VM's memory is neither targeted nor counted.
        assert result.reservoir_mb == HOST_MB - 1024
        assert drv.balloons == []

    def test_gone_before_its_balloon_moves_is_dropped_and_others_move(
            self, stats_conf):
        drv = Driver()
        drv.add('gone', stats_of(600))
        drv.add('stays', stats_of(600))
        drv.gone['set_balloon'] = {'gone'}
        manager = memory.MemoryManager(drv, CONF)
        result = run(manager, drv)
        assert set(result.vms) == {'stays'}
        # cmms shrinks both to their WSS: 1024 -> 600 (above the 256 MiB
        # floor, within the 512 MiB step).
        assert drv.balloons == [('stays', 600)]
        assert result.vms['stays'].target_mb == 600

    def test_a_vanished_vm_is_forgotten(self, stats_conf):
        drv = Driver()
        drv.add('vm', stats_of(800))
        manager = memory.MemoryManager(drv, CONF)
        assert run(manager, drv, 0).vms['vm'].wss_maxavg_mb == 800
        drv.gone['set_balloon'] = {'vm'}
        assert 'vm' not in run(manager, drv, 1).vms
        # A domain with the same uuid again (recreated) starts afresh:
        # its max-average is not held up by the old 800 MiB, and its
        # statistics period is set again.
        drv.gone.clear()
        drv.periods.clear()
        drv.add('vm', stats_of(100))
        again = run(manager, drv, 2).vms['vm']
        assert (again.wss_mb, again.wss_maxavg_mb) == (100, 100)
        assert [u for u, _s in drv.periods] == ['vm']

    def test_a_vm_kept_is_not_forgotten(self, stats_conf):
        # The counter-proof of the previous test: without the vanishing,
        # the max-average holds the larger average for its slice.
        drv = Driver()
        drv.add('vm', stats_of(800))
        manager = memory.MemoryManager(drv, CONF)
        run(manager, drv, 0)
        drv.add('vm', stats_of(100))
        assert run(manager, drv, 1).vms['vm'].wss_maxavg_mb == 800

    def test_a_domain_no_longer_listed_is_forgotten(self, stats_conf):
        drv = Driver()
        drv.add('vm', stats_of(800))
        manager = memory.MemoryManager(drv, CONF)
        run(manager, drv, 0)
        del drv.domains['vm']
        assert run(manager, drv, 1).vms == {}
        drv.add('vm', stats_of(100))
        assert run(manager, drv, 2).vms['vm'].wss_maxavg_mb == 100


class TestRefusals:

    def test_a_refused_balloon_is_logged_not_fatal(self, stats_conf,
                                                   caplog):
        drv = Driver()
        drv.add('refuses', stats_of(600))
        drv.add('moves', stats_of(600))
        drv.unsupported['set_balloon'] = {'refuses'}
        manager = memory.MemoryManager(drv, CONF)
        with caplog.at_level(logging.WARNING, logger='memagg.compute.memory'):
            result = run(manager, drv)
        assert drv.balloons == [('moves', 600)]
        # The VM keeps its result and its target (what memagg wanted).
        assert result.vms['refuses'].target_mb == 600
        assert result.vms['refuses'].wss_mb == 600
        assert any('refuses' in r.getMessage()
                   and 'set_balloon refused' in r.getMessage()
                   for r in caplog.records), caplog.text

    def test_a_refused_stats_period_is_logged_and_not_retried(
            self, stats_conf, caplog):
        drv = Driver()
        drv.add('vm', stats_of(600))
        drv.unsupported['set_stats_period'] = {'vm'}
        manager = memory.MemoryManager(drv, CONF)
        with caplog.at_level(logging.WARNING, logger='memagg.compute.memory'):
            first = run(manager, drv, 0)
            run(manager, drv, 1)
        assert first.vms['vm'].wss_mb == 600
        warnings = [r for r in caplog.records
                    if 'statistics period' in r.getMessage()]
        assert len(warnings) == 1, caplog.text


class TestBudget:

    def test_unmanaged_memory_is_taken_and_the_reservoir_reported(
            self, conf):
        conf.config(estimator='stats', group='wss')
        conf.config(reserved_host_memory_mb=512, group='compute')
        drv = Driver()
        drv.add('a', stats_of(600))
        drv.add('b', stats_of(1100, m_cur_mb=1536), max_mb=2048)
        # No balloon device, and a balloon without statistics.
        drv.add('noballoon', {}, balloon=False, current_mb=768)
        drv.add('nostats', {}, current_mb=256)
        manager = memory.MemoryManager(drv, CONF)
        result = run(manager, drv)
        assert result.vms['noballoon'].estimator == (
            'unmanaged: ' + memory.NO_BALLOON)
        assert result.vms['nostats'].estimator == (
            'unmanaged: ' + memory.NO_STATS)
        assert result.vms['noballoon'].target_mb is None
        targets = {u: r.target_mb for u, r in result.vms.items()
                   if r.managed}
        # a: 1024 -> 600; b: 1536 -> 1100 (both within max_step_mb).
        assert targets == {'a': 600, 'b': 1100}
        budget = HOST_MB - 512 - 768 - 256
        assert result.reservoir_mb == budget - 600 - 1100
        assert sorted(drv.balloons) == [('a', 600), ('b', 1100)]

    @pytest.mark.parametrize('host_mb', [HOST_MB, 4 * HOST_MB])
    def test_a_fixed_guest_memory_holds_whatever_the_host_reports(
            self, conf, host_mb):
        # The budget is guest_memory_mb less the unmanaged VM, however
        # much memory the hypervisor says the host has (hot-plug moves it)
        # and whatever is reserved.
        conf.config(estimator='stats', group='wss')
        conf.config(guest_memory_mb=2048, reserved_host_memory_mb=512,
                    group='compute')
        drv = Driver()
        drv.host_mb = host_mb
        drv.add('unmanaged', {}, balloon=False, current_mb=512)
        drv.add('a', stats_of(600))
        result = run(memory.MemoryManager(drv, CONF), drv)
        assert result.vms['a'].target_mb == 600
        assert result.reservoir_mb == 2048 - 512 - 600

    def test_unmanaged_memory_limits_what_a_vm_may_grow_into(self, conf):
        # A VM with swap-ins grows (Badis, stats fallback: m_cur +
        # grow_step_mb); cmms gives it only what the budget leaves after
        # the unmanaged VM: 4096 - 3584 - 1024 (m_cur) = 0 beyond m_cur
        # when the unmanaged VM is counted.
        conf.config(reserved_host_memory_mb=0, group='compute')
        drv = Driver()
        drv.add('unmanaged', {}, balloon=False, current_mb=3072)
        drv.add('short', stats_of(1000, swap_in=0))
        manager = memory.MemoryManager(drv, CONF)
        run(manager, drv, 0)
        drv.add('short', stats_of(1000, swap_in=50000))
        result = run(manager, drv, 1)
        short = result.vms['short']
        assert short.shortage
        assert short.wss_mb == 1024 + 128
        # Booked 2048: the guarantee may take it to its need, but only
        # from free memory; there is none beyond 4096 - 3072 - 1024.
        assert short.target_mb == 1024
        assert result.reservoir_mb == 0
