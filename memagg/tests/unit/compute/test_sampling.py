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

"""The per-VM native sampler: the fraction rescaled to m_cur, and a sampler
backend the kernel lacks reported, not fatal.

The guest RAM here is a memfd mapping of this test process (4 KiB pages),
sampled by the real memagg._native; the hypervisor is an in-test driver
implementing memagg/drivers/hypervisor/base.py's HypervisorDriver. The
clear_refs backend is used where a backend must work: DAMON is global to
the host and a real-guest test may hold it.
"""
import ctypes
import errno
import datetime
import logging
import mmap
import os

import pytest

from memagg.compute import memory
from memagg.compute import sampling
from memagg.conf import CONF
from memagg.drivers.hypervisor import base

MIB = 1024 * 1024
PAGE = 4096
RAM_MB = 64
NOW = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)

_native = pytest.importorskip('memagg._native')


class TestScaledSample:

    def test_the_fraction_is_relative_to_m_cur(self):
        # 100 of 1000 pages drawn over a 1024 MiB mapping were accessed:
        # 102.4 MiB, a fifth of the 512 MiB the balloon leaves the guest.
        sample = {'sampled': 1000, 'accessed': 100, 'present': 600,
                  'fraction': 0.1, 'backend': 'x'}
        scaled = sampling.scaled_sample(sample, 1024, 512)
        assert scaled['fraction'] == pytest.approx(0.2)
        assert scaled['accessed_mb'] == pytest.approx(102.4)
        # The rest of the sample is kept, the input left alone.
        assert scaled['present'] == 600 and scaled['backend'] == 'x'
        assert sample['fraction'] == 0.1

    def test_unballooned_the_fraction_is_unchanged(self):
        scaled = sampling.scaled_sample({'sampled': 200, 'accessed': 50},
                                        256, 256)
        assert scaled['fraction'] == pytest.approx(0.25)

    def test_the_fraction_is_capped_at_one(self):
        # More accessed than m_cur (the balloon shrank during the window).
        scaled = sampling.scaled_sample({'sampled': 100, 'accessed': 80},
                                        1024, 512)
        assert scaled['fraction'] == 1.0
        assert scaled['accessed_mb'] == pytest.approx(819.2)

    @pytest.mark.parametrize('sample, m_cur', [
        ({'sampled': 0, 'accessed': 0}, 512),
        ({'accessed': 3}, 512),
        ({'sampled': 100, 'accessed': 10}, 0),
    ])
    def test_no_fraction_without_pages_or_memory(self, sample, m_cur):
        assert sampling.scaled_sample(sample, 1024, m_cur)['fraction'] is None


@pytest.fixture
def guest_ram():
    """(address, mmap) of RAM_MB of memfd memory, every page present."""
    fd = os.memfd_create('memagg-test-guest-ram')
    try:
        os.ftruncate(fd, RAM_MB * MIB)
        ram = mmap.mmap(fd, RAM_MB * MIB)
    finally:
        os.close(fd)
    view = ctypes.c_char.from_buffer(ram)
    address = ctypes.addressof(view)
    del view  # the mapping cannot close while a buffer export lives
    touch(ram, RAM_MB)
    yield address, ram
    ram.close()


def touch(ram, mb):
    for offset in range(0, mb * MIB, PAGE):
        ram[offset] = 1


class Driver(base.HypervisorDriver):
    """One VM whose guest RAM is ``ram`` in this process; its balloon
    leaves it ``m_cur_mb`` of its RAM_MB."""

    def __init__(self, address, m_cur_mb):
        self.address = address
        self.m_cur_mb = m_cur_mb
        self.lookups = 0

    def get_host_info(self):
        return base.HostInfo('node', 4096, 4096, 2)

    def list_domains(self):
        kib = self.m_cur_mb * 1024
        return [base.DomainInfo(
            uuid='vm', name='vm', max_memory_mb=RAM_MB,
            current_memory_mb=self.m_cur_mb, vcpus=1, cpu_time_ns=0,
            memory_stats={'actual': kib, 'available': kib,
                          'usable': kib - 20 * 1024},
            stats_period=CONF.compute.balloon_stats_period)]

    def guest_memory(self, uuid):
        self.lookups += 1
        return base.GuestMemory(os.getpid(), self.address, RAM_MB * MIB,
                                'test')

    def set_balloon(self, uuid, target_mb):
        """The test keeps the balloon where it is."""


def period(manager, drv):
    return manager.run_period(drv.get_host_info(), drv.list_domains(),
                              NOW).vms['vm']


def run_periods(guest_ram, count, touched_mb=0):
    """Run ``count`` periods of a MemoryManager over one unballooned Driver
    VM on ``guest_ram``, the guest touching its first ``touched_mb`` before
    each; return (driver, [the VM's result of each period])."""
    address, ram = guest_ram
    drv = Driver(address, m_cur_mb=RAM_MB)
    manager = memory.MemoryManager(drv, CONF)
    try:
        results = []
        for _ in range(count):
            touch(ram, touched_mb)
            results.append(period(manager, drv))
    finally:
        manager.close()
    return drv, results


def test_the_sampled_wss_is_the_accessed_memory_of_a_ballooned_vm(
        conf, guest_ram):
    conf.config(estimator='sampler', sampler_backend='clear_refs',
                group='wss')
    address, ram = guest_ram
    # The balloon holds half the RAM; 16 MiB are touched in the window.
    drv = Driver(address, m_cur_mb=RAM_MB // 2)
    manager = memory.MemoryManager(drv, CONF)
    try:
        first = period(manager, drv)
        assert first.wss_mb is None  # the window opens now
        assert first.sampler_backend == 'clear_refs'
        touch(ram, 16)
        second = period(manager, drv)
    finally:
        manager.close()
    # f / n over the whole mapping is 1/4; relative to m_cur it is 1/2:
    # (f / n) * m_cur is the 16 MiB accessed, not 8.
    assert second.wss_mb == pytest.approx(16, abs=2)
    assert second.estimator == 'sampler'
    assert second.sampler_error is None


def test_a_backend_the_kernel_lacks_is_reported_not_fatal(
        conf, guest_ram, caplog):
    supported, reason = _native.backends()['page_idle']
    if supported:
        pytest.skip('this kernel has idle page tracking')
    conf.config(estimator='badis', sampler_backend='page_idle',
                group='wss')
    with caplog.at_level(logging.WARNING, logger='memagg.compute'):
        drv, results = run_periods(guest_ram, 3)
    for result in results:
        # The VM is still managed, on Badis' stats fallback: the guest's
        # 20 MiB in use plus the 64 MiB pinned-page margin.
        assert result.managed and result.wss_mb == 20 + 64
        assert result.estimator == 'badis/V/stats'
        assert result.sampler_backend is None
        assert 'page_idle' in result.sampler_error
        assert reason in result.sampler_error
    # The open is retried every period (RAM may appear later), the reason
    # logged once.
    assert drv.lookups == 3
    logged = [r for r in caplog.records if 'page_idle' in r.getMessage()]
    assert len(logged) == 1, caplog.text
    assert 'vm' in logged[0].getMessage()


REAL_SAMPLER = _native.Sampler


class FailingSampler:
    """The real memagg._native.Sampler, except that the begin() calls
    numbered in ``fail`` (from 1, over every instance) raise ``error``, and
    the collect() calls numbered in ``fail_collect`` raise
    ``collect_error``: the kernel refusing a window, or the host moving the
    sampled pages during one, cannot be provoked on demand here (the DAMON
    case is tested for real in tests/unit/native/test_sampler.py, moved
    pages in native/tests and on a real guest)."""

    fail = ()
    error = OSError(errno.ENODEV, 'cannot set DAMON region 0 of ...: '
                    'No such device')
    fail_collect = ()
    collect_error = OSError(
        errno.EAGAIN, 'the host moved 600 of 1000 sampled pages during the '
        'window (compaction or migration)')
    opened = 0
    begins = 0
    collects = 0

    def __init__(self, *args, **kwargs):
        type(self).opened += 1
        self._real = REAL_SAMPLER(*args, **kwargs)

    @property
    def backend(self):
        return self._real.backend

    @property
    def n(self):
        return self._real.n

    @n.setter
    def n(self, value):
        self._real.n = value

    @property
    def draws_next(self):
        return self._real.draws_next

    def begin(self):
        type(self).begins += 1
        if self.begins in self.fail:
            raise self.error
        self._real.begin()

    def collect(self):
        type(self).collects += 1
        sample = self._real.collect()
        if self.collects in self.fail_collect:
            raise self.collect_error
        return sample

    def close(self):
        self._real.close()


@pytest.fixture
def failing_sampler(monkeypatch, conf):
    conf.config(estimator='badis', sampler_backend='clear_refs',
                min_margin_mb=0, group='wss')

    def make(fail=(), error=None, fail_collect=()):
        attrs = {'fail': fail, 'fail_collect': fail_collect, 'opened': 0,
                 'begins': 0, 'collects': 0}
        if error is not None:
            attrs['error'] = error
        cls = type('Sampler', (FailingSampler,), attrs)
        monkeypatch.setattr(sampling._native, 'Sampler', cls)
        return cls
    return make


def test_a_lost_window_keeps_the_sampler_and_the_last_estimate(
        failing_sampler, guest_ram, caplog):
    sampler_class = failing_sampler(fail=(2,))
    # The guest's stats say 20 MiB used; 40 MiB are touched every window.
    with caplog.at_level(logging.WARNING, logger='memagg.compute'):
        drv, results = run_periods(guest_ram, 4, touched_mb=40)
    labels = [(r.estimator, r.wss_mb) for r in results]
    # 1: no window yet; 2: window 1; 3: window 2 was not armed (begin()
    # failed in period 2): window 1's estimate held, not the stats' 20;
    # 4: window 3, armed by the same sampler.
    assert [label for label, _wss in labels] == [
        'badis/V/stats', 'badis/V/sampler', 'badis/V/held',
        'badis/V/sampler'], labels
    for _label, wss in labels[1:]:
        assert wss == pytest.approx(40, abs=3), labels
    assert drv.lookups == 1 and sampler_class.opened == 1
    assert 'No such device' in results[2].sampler_error
    assert results[3].sampler_error is None
    assert results[3].sampler_backend == 'clear_refs'
    logged = [r for r in caplog.records if 'No such device' in r.message]
    assert len(logged) == 1, caplog.text
    assert 'vm' in logged[0].message


@pytest.mark.parametrize('fail, error', [
    # Two windows in a row.
    ((2, 3), None),
    # QEMU is gone: its RAM must be found again.
    ((2,), OSError(errno.ESRCH, 'process 42 does not exist')),
])
def test_the_sampler_is_opened_again_when_it_cannot_recover(
        failing_sampler, guest_ram, fail, error):
    sampler_class = failing_sampler(fail=fail, error=error)
    drv, results = run_periods(guest_ram, len(fail) + 3)
    assert drv.lookups == 2 and sampler_class.opened == 2
    assert results[-1].estimator == 'badis/V/sampler'
    assert results[-1].sampler_error is None


def test_windows_the_host_moved_are_lost_and_the_sampler_kept(
        failing_sampler, guest_ram, caplog):
    # The host moved most sampled pages in two windows in a row (EAGAIN):
    # unlike two failures of the sampler, that is no reason to open it
    # again.
    sampler_class = failing_sampler(fail_collect=(2, 3))
    with caplog.at_level(logging.WARNING, logger='memagg.compute'):
        drv, results = run_periods(guest_ram, 5, touched_mb=40)
    labels = [(r.estimator, r.wss_mb) for r in results]
    # 1: no window yet; 2: window 1; 3: window 2 lost, window 1's estimate
    # held; 4: window 3 lost too, Badis falls back on the guest's stats;
    # 5: window 4, from the same sampler.
    assert [label for label, _wss in labels] == [
        'badis/V/stats', 'badis/V/sampler', 'badis/V/held', 'badis/V/stats',
        'badis/V/sampler'], labels
    for n in (1, 2, 4):
        assert labels[n][1] == pytest.approx(40, abs=3), labels
    assert drv.lookups == 1 and sampler_class.opened == 1
    assert sampler_class.begins == 5
    assert 'the host moved 600 of 1000' in results[2].sampler_error
    assert results[4].sampler_error is None
    logged = [r for r in caplog.records if 'host moved' in r.message]
    assert len(logged) == 1, caplog.text
    assert 'sampler window lost' in logged[0].message


def test_a_window_the_host_moved_is_not_a_failure_of_the_sampler(
        failing_sampler, guest_ram):
    # A begin() that fails right after a window the host spoiled is the
    # sampler's first failure in a row: it is kept.
    sampler_class = failing_sampler(fail=(3,), fail_collect=(2,))
    drv, results = run_periods(guest_ram, 6)
    assert drv.lookups == 1 and sampler_class.opened == 1
    assert results[-1].estimator == 'badis/V/sampler'


class TestSampleSize:

    size = sampling.SampleSize(first=1000, error=0.05, confidence=0.95,
                               min_pages=1000, max_pages=20000)

    @pytest.mark.parametrize('fraction, pages', [
        # ALGORITHMS.md §1: about 4,600 pages at p = 0.25, 13,800 at 0.1.
        (0.25, 4610), (0.1, 13830),
        # A hot VM needs few pages: the floor; an idle one the ceiling.
        (0.9, 1000), (0.01, 20000), (0.0, 20000),
        # No estimate yet: the first window's n.
        (None, 1000),
    ])
    def test_n_follows_the_last_fraction(self, fraction, pages):
        assert self.size.pages(fraction) == pages

    @pytest.mark.parametrize('population, pages', [
        # 128 MiB: the finite population correction matters; 4 GiB: not.
        (32768, 4042), (1 << 20, 4590),
    ])
    def test_distinct_pages_of_a_small_range_need_fewer(
            self, population, pages):
        assert self.size.pages(0.25, population) == pages
        # ... for the same interval: +-5 % of p = 0.25 at 95 %.
        half = self.size.half_width(pages // 4, pages, population)
        assert half == pytest.approx(0.0125, rel=0.01)

    def test_every_page_sampled_leaves_no_sampling_error(self):
        assert self.size.half_width(300, 1000, 1000) == 0
        corrected = self.size.half_width(300, 1000, 2000)
        assert corrected < self.size.half_width(300, 1000)

    def test_no_wanted_error_keeps_n(self):
        size = sampling.SampleSize(first=700, error=0.0)
        assert size.pages(0.01) == size.pages(0.9) == 700

    def test_the_interval_at_that_n_is_the_wanted_one(self):
        # +-5 % of p = 0.25 at 95 %: 0.0125 of the range.
        half = self.size.half_width(1152, 4610)
        assert half == pytest.approx(0.0125, rel=0.01)
        # Wilson's interval is not empty at p = 0.
        assert 0 < self.size.half_width(0, 1000) < 0.005
        assert self.size.half_width(0, 0) is None

    def test_bounds_the_wrong_way_round_name_both_options(self, conf):
        conf.config(sampler_min_pages=5000, sampler_max_pages=2000,
                    group='wss')
        with pytest.raises(ValueError, match='sampler_min_pages .5000. is '
                           'above sampler_max_pages .2000.'):
            sampling.SampleSize.from_conf(CONF.wss)


class ScriptedSampler:
    """Stands in for memagg._native.Sampler where the test needs a DAMON
    backend's exact counts (DAMON is global to the host and a real-guest
    test may hold it): a ``fraction`` of the pages drawn is accessed (a
    quarter unless a test sets it), and ``draws_next`` says what the real
    one's says: whether the next begin() draws anew."""

    instances = []
    fraction = 0.25
    draws_next = True

    def __init__(self, pid, start, length, n=1000, backend='auto',
                 split_huge_pages=False):
        self.n = n
        self.backend = 'damon_paddr'
        self.split_huge_pages = split_huge_pages
        self.begun_with = []
        self.instances.append(self)

    def begin(self):
        self.begun_with.append(self.n)

    def collect(self):
        return {'sampled': self.n, 'accessed': int(self.n * self.fraction),
                'present': self.n, 'moved': 0, 'fraction': self.fraction,
                'backend': 'damon_paddr', 'window_s': 1.0}

    def close(self):
        pass


def test_n_comes_from_the_wanted_confidence(monkeypatch, conf, guest_ram):
    conf.config(estimator='sampler', group='wss')
    monkeypatch.setattr(sampling._native, 'Sampler', ScriptedSampler)
    ScriptedSampler.instances = []
    drv, results = run_periods(guest_ram, 3)
    sampler, = ScriptedSampler.instances
    # The first window draws sampler_pages; p = 0.25 then asks for 4,610
    # pages, 3,598 once corrected for the 16,384 of the 64 MiB range.
    assert sampler.begun_with == [1000, 3598, 3598]
    assert [r.sampler_pages for r in results] == [None, 1000, 3598]
    # The interval is reported in MiB of the 64 MiB range: +-5 % of the
    # 16 MiB hot at n = 3,598, about twice that at n = 1,000.
    assert results[2].sampler_error_mb == pytest.approx(0.8, rel=0.02)
    assert results[1].sampler_error_mb == pytest.approx(1.7, rel=0.05)
    assert results[2].wss_mb == 16


def test_a_smaller_n_waits_for_the_samplers_next_draw(monkeypatch, conf,
                                                      guest_ram):
    """A new n draws the pages anew, which for damon_paddr rewrites the host
    kdamond's regions: a larger n (the interval needs it) is drawn at once,
    a smaller one only when the sampler draws anyway."""
    conf.config(estimator='sampler', group='wss')
    monkeypatch.setattr(sampling._native, 'Sampler', ScriptedSampler)
    monkeypatch.setattr(ScriptedSampler, 'instances', [])
    monkeypatch.setattr(ScriptedSampler, 'draws_next', False)
    address, ram = guest_ram
    drv = Driver(address, m_cur_mb=RAM_MB)
    manager = memory.MemoryManager(drv, CONF)
    try:
        period(manager, drv)
        period(manager, drv)
        monkeypatch.setattr(ScriptedSampler, 'fraction', 0.5)
        results = [period(manager, drv), period(manager, drv)]
        monkeypatch.setattr(ScriptedSampler, 'draws_next', True)
        results.append(period(manager, drv))
    finally:
        manager.close()
    sampler, = ScriptedSampler.instances
    smaller = sampling.SampleSize().pages(0.5, RAM_MB * MIB // PAGE)
    assert smaller < 3598 / 1.25
    assert sampler.begun_with == [1000, 3598, 3598, 3598, smaller]
    # Each window reports the n it was drawn with.
    assert [r.sampler_pages for r in results] == [3598, 3598, 3598]


@pytest.mark.parametrize('split', [True, False])
def test_huge_page_splitting_follows_the_option(monkeypatch, conf,
                                                guest_ram, split):
    conf.config(estimator='sampler', sampler_split_huge_pages=split,
                group='wss')
    monkeypatch.setattr(sampling._native, 'Sampler', ScriptedSampler)
    ScriptedSampler.instances = []
    run_periods(guest_ram, 1)
    sampler, = ScriptedSampler.instances
    assert sampler.split_huge_pages is split


def test_warming_windows_stay_out_of_the_max_average(conf, guest_ram):
    conf.config(estimator='sampler', sampler_backend='clear_refs',
                group='wss')
    address, ram = guest_ram
    drv = Driver(address, m_cur_mb=RAM_MB)
    manager = memory.MemoryManager(drv, CONF)
    try:
        period(manager, drv)
        touch(ram, 16)
        first = period(manager, drv)
        touch(ram, 16)
        steady = period(manager, drv)
        # The balloon takes a quarter of the guest during the next window.
        drv.m_cur_mb = RAM_MB * 3 // 4
        touch(ram, 40)
        moved = period(manager, drv)
        touch(ram, 40)
        after = period(manager, drv)
    finally:
        manager.close()
    # The VM's first window is reported, not taken as truth.
    assert first.wss_mb == pytest.approx(16, abs=2) and first.warming
    assert first.wss_maxavg_mb is None
    assert not steady.warming
    assert steady.wss_maxavg_mb == steady.wss_mb
    # So is the window the balloon moved through: 40 MiB read, the
    # max-average still the steady window's.
    assert moved.warming and moved.wss_mb == pytest.approx(40, abs=2)
    assert moved.wss_maxavg_mb == steady.wss_maxavg_mb
    assert not after.warming and after.wss_maxavg_mb > steady.wss_maxavg_mb


class CachedDriver(Driver):
    """The guest's balloon statistics count 40 MiB used, page cache
    included."""

    def list_domains(self):
        domains = super().list_domains()
        kib = self.m_cur_mb * 1024
        domains[0].memory_stats['usable'] = kib - 40 * 1024
        return domains


def test_a_missed_window_never_lets_the_stats_into_the_max_average(
        failing_sampler, guest_ram):
    failing_sampler(fail_collect=(3, 4))
    address, ram = guest_ram
    drv = CachedDriver(address, m_cur_mb=RAM_MB)
    manager = memory.MemoryManager(drv, CONF)
    try:
        results = []
        for _ in range(5):
            touch(ram, 20)
            results.append(period(manager, drv))
    finally:
        manager.close()
    labels = [r.estimator for r in results]
    # 1: no window yet: the stats' 40 MiB stand in, not fed; 2: window 1
    # (warming); 3: window 2, the first fed; 4: window 3 lost, window 2's
    # held; 5: window 4 lost too: the stats' 40 MiB, reported, not fed.
    assert labels == ['badis/V/stats', 'badis/V/sampler', 'badis/V/sampler',
                      'badis/V/held', 'badis/V/stats'], labels
    assert [r.warming for r in results] == [True, True, False, False, True]
    assert results[0].wss_maxavg_mb is None
    assert results[1].wss_maxavg_mb is None
    assert results[4].wss_mb == 40
    for result in results[2:]:
        assert result.wss_maxavg_mb == pytest.approx(20, abs=3)
