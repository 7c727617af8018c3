"""The per-VM native sampler: the fraction rescaled to m_cur, and a sampler
backend the kernel lacks reported, not fatal.

The guest RAM here is a memfd mapping of this test process (4 KiB pages),
sampled by the real memagg._native; the hypervisor is an in-test driver
implementing memagg/drivers/hypervisor/base.py's HypervisorDriver. The
clear_refs backend is used where a backend must work: DAMON is global to
the host and a real-guest test may hold it.
"""
import ctypes
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
    address, ram = guest_ram
    drv = Driver(address, m_cur_mb=RAM_MB)
    manager = memory.MemoryManager(drv, CONF)
    try:
        with caplog.at_level(logging.WARNING, logger='memagg.compute'):
            results = [period(manager, drv) for _ in range(3)]
    finally:
        manager.close()
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
