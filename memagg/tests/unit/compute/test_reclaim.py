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

"""Host-side reclaim (issue 19): the cold set, the runs paged out, the
host's swap and PSI, and HostReclaim's options and periods. The plug-ins
have their own tests under memagg/tests/unit/drivers/ (reclaim,
host_reclaim); the page-out itself runs against real processes in
memagg/tests/unit/native/test_page_out.py."""
import ctypes
import mmap
import os

import pytest

from memagg.common import exceptions
from memagg.compute import reclaim
from memagg.conf import CONF
from memagg.drivers.hypervisor import base as hypervisor
from memagg.drivers.reclaim import base as mechanism_base

MIB = 1 << 20


# ---- the host's swap -------------------------------------------------

def _files(tmp_path, swaps, swap_total, swap_free):
    (tmp_path / 'swaps').write_text(
        'Filename\tType\tSize\tUsed\tPriority\n' + swaps)
    (tmp_path / 'meminfo').write_text(
        'MemTotal:  1000 kB\nSwapTotal: %d kB\nSwapFree: %d kB\n'
        % (swap_total, swap_free))
    return str(tmp_path / 'meminfo'), str(tmp_path / 'swaps')


def test_no_swap_device_is_the_reason(tmp_path):
    reason = mechanism_base.host_swap_reason(*_files(tmp_path, '', 0, 0))
    assert 'no swap space configured' in reason


def test_full_swap_is_the_reason(tmp_path):
    reason = mechanism_base.host_swap_reason(*_files(
        tmp_path, '/tmp/swap file 1024 1024 -2\n', 1024, 0))
    assert 'full' in reason and '/tmp/swap' in reason


def test_free_swap_has_no_reason(tmp_path):
    assert mechanism_base.host_swap_reason(*_files(
        tmp_path, '/tmp/swap file 1024 10 -2\n', 1024, 1014)) is None


# ---- the cold set and its runs --------------------------------------

def test_a_block_is_cold_after_the_cold_age_of_idle_windows():
    cold = reclaim.ColdSet(cold_age_s=120)
    # Pages 1 and 2 in the first 2 MiB block, 600 in the second.
    cold.update({1, 2, 600}, (), window_start=0)
    cold.update({1, 2, 600}, (), window_start=60)
    assert cold.cold(now=119) == []
    # Page 2 accessed in the third window: its block's clock starts again.
    cold.update({1, 600}, {2}, window_start=120)
    assert cold.cold(now=180) == [600]
    cold.update({1, 2, 600}, (), window_start=180)
    assert cold.cold(now=240) == [600]
    assert cold.cold(now=300) == [1, 2, 600]


def test_a_blocks_clock_goes_on_when_the_sampler_draws_anew():
    cold = reclaim.ColdSet(cold_age_s=60)
    cold.update({7}, (), window_start=0)
    # Redrawn: another page of the same block, idle too.
    cold.update({9}, (), window_start=30)
    assert cold.cold(now=60) == [9]


def test_a_block_not_seen_in_a_window_starts_again():
    cold = reclaim.ColdSet(cold_age_s=60)
    cold.update({7}, (), window_start=0)
    cold.update((), (), window_start=30)    # lost, or no sample there
    cold.update({7}, (), window_start=60)
    assert cold.cold(now=90) == []
    assert cold.cold(now=120) == [7]
    cold.drop([7])
    assert len(cold) == 0


def test_runs_are_the_strata_cut_at_huge_page_boundaries():
    start = 1000 * 4096 * 512       # 2 MiB aligned, page 512000
    first = start // 4096
    # 4096 pages, n = 4: strata of 1024 pages (4 MiB), two huge pages each.
    runs = reclaim.runs_around([first + 10, first + 1500, first + 3000],
                               start, 4096 * 4096, 4)
    assert runs == [(first, 512), (first + 1024, 512),
                    (first + 2560, 512)]


def test_runs_of_small_strata_merge_and_stay_in_the_mapping():
    start = 512 * 4096
    first = start // 4096
    # 1024 pages, n = 256: strata of 4 pages.
    runs = reclaim.runs_around([first + 1, first + 5, first + 9, 5, 10 ** 9],
                               start, 1024 * 4096, 256)
    assert runs == [(first, 12)]
    assert reclaim.take([(0, 12), (100, 8)], 15) == [(0, 12), (100, 3)]
    assert reclaim.take([(0, 12)], 0) == []


def test_the_blocks_idle_longest_go_first():
    start = 1000 * 4096 * 512
    first = start // 4096
    # Strata of 1024 pages cut at the 2 MiB boundaries: 512-page runs. The
    # lowest block (a guest kernel's, touched now and then) has been idle
    # since 90, the other two since 0.
    pages = [first + 10, first + 1500, first + 3000]
    since = {first + 10: 90, first + 1500: 0, first + 3000: 0}.get
    assert reclaim.coldest_runs(pages, since, start, 4096 * 4096, 4,
                                700) == [(first + 1024, 512),
                                         (first + 2560, 188)]
    # Enough for all three: in address order, the last one cut.
    assert reclaim.coldest_runs(pages, since, start, 4096 * 4096, 4,
                                1100) == [(first, 512), (first + 1024, 512),
                                          (first + 2560, 76)]
    assert reclaim.coldest_runs(pages, since, start, 4096 * 4096, 4,
                                0) == []


def test_covered_pages_are_those_inside_a_run():
    runs = [(10, 5), (100, 8)]
    assert reclaim.covered([3, 10, 14, 15, 99, 100, 107, 108], runs) == [
        10, 14, 100, 107]
    assert reclaim.covered([1, 2], []) == []


def test_runs_by_block_are_cut_at_huge_page_boundaries():
    assert reclaim.by_block([(500, 30), (1024, 512), (2000, 10)]) == {
        0: [(500, 12)], 1: [(512, 18)], 2: [(1024, 512)],
        3: [(2000, 10)]}


def test_refaulted_blocks_are_those_with_a_resident_page_again():
    # This process's own anonymous memory, through the real pagemap: a
    # page touched is resident, one never touched is not.
    area = mmap.mmap(-1, 4 * 512 * 4096)
    try:
        anchor = ctypes.c_char.from_buffer(area)
        first = ctypes.addressof(anchor) // 4096
        del anchor
        area[512 * 4096 + 100] = 1
        blocks = {1: [(first + 512, 8)], 3: [(first + 1536, 8)]}
        back = reclaim.refaulted_blocks(os.getpid(), blocks)
    finally:
        area.close()
    assert back == {1}
    with pytest.raises(hypervisor.DomainGone):
        reclaim.refaulted_blocks(2 ** 22 + 1, blocks, '/nonexistent')


# ---- PSI and QEMU's counters ----------------------------------------

def test_psi_some_avg10(tmp_path):
    path = tmp_path / 'memory'
    path.write_text('some avg10=1.50 avg60=0.20 avg300=0.00 total=123\n'
                    'full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n')
    assert reclaim.psi_some(str(path)) == 1.5
    assert reclaim.psi_some(str(tmp_path / 'absent')) is None


def test_process_counters_read_swap_and_major_faults(tmp_path):
    proc = tmp_path / '42'
    proc.mkdir()
    (proc / 'smaps_rollup').write_text(
        '7f00-7fff ---p 00000000 00:00 0 [rollup]\nRss:  4096 kB\n'
        'SwapPss:  1024 kB\nSwap:  2048 kB\n')
    fields = ['S'] + ['0'] * 8 + ['77'] + ['0'] * 30
    (proc / 'stat').write_text('42 (qemu-system x86) ' + ' '.join(fields))
    assert reclaim.process_counters(42, str(tmp_path)) == (2.0, 77)
    with pytest.raises(hypervisor.DomainGone):
        reclaim.process_counters(43, str(tmp_path))
    # And this very process, through the real /proc.
    swap_mb, majflt = reclaim.process_counters(os.getpid())
    assert swap_mb >= 0 and majflt >= 0


@pytest.mark.parametrize('option,value', [
    ('promotion_slo', 0.0), ('promotion_slo', -1.0), ('promotion_slo', 101.0),
    ('cold_age_s', 0.0), ('cold_age_s', -5.0), ('backoff', 1.0),
    ('backoff', 0.0), ('grow_mb', 0), ('psi_some_max', 101.0)])
def test_a_wrong_option_fails_at_start_naming_it(option, value):
    CONF.set_override('controller', 'senpai', 'host_reclaim')
    CONF.set_override(option, value, 'host_reclaim')
    with pytest.raises(exceptions.InvalidParameter,
                       match=r'\[host_reclaim\] %s' % option):
        reclaim.HostReclaim(CONF)


def test_an_unknown_controller_names_the_option():
    CONF.set_override('controller', 'tmo', 'host_reclaim')
    with pytest.raises(exceptions.InvalidParameter,
                       match=r'\[host_reclaim\] controller.*senpai'):
        reclaim.HostReclaim(CONF)


# ---- HostReclaim's period -------------------------------------------

class Recorder(mechanism_base.Mechanism):
    name = 'madvise'

    def __init__(self):
        self.calls = []

    def reclaim(self, memory, runs, amount_bytes):
        self.calls.append((runs, amount_bytes))


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def _host_reclaim(counters, swap_reason=lambda: None,
                  refaulted=lambda pid, blocks: set()):
    CONF.set_override('controller', 'senpai', 'host_reclaim')
    CONF.set_override('cold_age_s', 120, 'host_reclaim')
    CONF.set_override('grow_mb', 1, 'host_reclaim')
    clock = Clock()

    def read_counters(pid):
        if pid not in counters:
            raise hypervisor.DomainGone('process %d is gone' % pid)
        return counters[pid]

    host = reclaim.HostReclaim(CONF, clock=clock, psi=lambda: 0.0,
                               swap_reason=swap_reason,
                               counters=read_counters,
                               refaulted=refaulted)
    host.mechanism = Recorder()
    return host, clock


def _guest_ram():
    """4096 pages of guest RAM in process 5, 2 MiB aligned; its first
    page number."""
    start = 512 * 4096 * 64
    return hypervisor.GuestMemory(pid=5, start=start, length=4096 * 4096,
                                  method='test'), start // 4096


def test_period_pages_out_the_cold_runs_up_to_the_limit():
    counters = {5: (0.0, 100)}
    host, clock = _host_reclaim(counters)
    memory, first = _guest_ram()
    idle = {first + 10, first + 1500}
    for t in (60, 120, 180):
        clock.now = t
        host.observe('vm', idle, (), window_s=60)
    # First period: no promotion rate yet, the limit holds at 0.
    assert host.period('vm', memory, 4, 1000, False).paged_out_mb == 0
    clock.now = 240
    host.observe('vm', idle, (), window_s=60)
    result = host.period('vm', memory, 4, 1000, False)
    # Limit 1 MiB: 256 pages of the first cold run.
    assert result.limit_mb == 1
    assert result.promotions_per_min == 0
    assert result.slo_per_min == pytest.approx(512)
    assert host.mechanism.calls == [([(first, 256)], 256 * 4096)]
    assert result.paged_out_mb == 1
    # The sample paged out leaves the cold set; the other stays.
    assert host._vms['vm'].cold.cold(240) == [first + 1500]


def _periods(wss_maxavg_mb):
    """period(t, swap_mb, majflt): the VmReclaim of a VM whose WSS
    max-average is ``wss_maxavg_mb`` for its period ending at ``t``, its
    QEMU then holding ``swap_mb`` in swap after ``majflt`` major faults."""
    counters = {5: (8.0, 100)}
    host, clock = _host_reclaim(counters)
    memory = hypervisor.GuestMemory(pid=5, start=0, length=4096 * 4096,
                                    method='test')

    def period(t, swap_mb, majflt):
        clock.now = t
        counters[5] = (swap_mb, majflt)
        return host.period('vm', memory, 4, wss_maxavg_mb, False)
    return period


def test_promotions_are_major_faults_that_took_pages_out_of_swap():
    period = _periods(1000)

    def rate(t, swap_mb, majflt):
        return period(t, swap_mb, majflt).promotions_per_min
    assert rate(0, 8.0, 100) is None
    # 30 major faults, the swap as it was: QEMU's own file pages, dropped
    # from the host's page cache, came back.
    assert rate(60, 8.0, 130) == 0
    # 1 MiB (256 pages) left swap by 1,000 major faults: 256 promotions.
    assert rate(120, 7.0, 1130) == pytest.approx(256)
    # 1 MiB left swap in 30 s by 10 major faults (the guest freed the
    # rest): 10 promotions, counted with the period before it to span a
    # minute: 266 in 90 s.
    assert rate(150, 6.0, 1140) == pytest.approx(266 / 1.5)
    # 30 s more without a fault: the 256 drop out of the minute.
    assert rate(180, 6.0, 1140) == pytest.approx(10)


def test_a_refault_in_a_short_period_counts_over_the_minute():
    period = _periods(63)
    for t in range(0, 60, 3):
        period(t, 8.0, 100)
    # Two pages back in a 3 s period: 40 a minute by the period alone, over
    # the SLO of a 63 MiB WSS (32.3); 2 in the minute it ends.
    result = period(60, 8.0 - 2 / 256, 102)
    assert result.promotions_per_min == pytest.approx(2)
    assert result.promotions_per_min < result.slo_per_min
    assert result.limit_mb > 0


def test_promotions_count_from_the_swap_left_after_a_page_out():
    counters = {5: (0.0, 100)}
    host, clock = _host_reclaim(counters)
    memory, first = _guest_ram()
    for t in (60, 120, 180):
        clock.now = t
        host.observe('vm', {first + 10}, (), window_s=60)
    host.period('vm', memory, 4, 1000, False)

    def reclaim(memory, runs, amount_bytes):
        # What MADV_PAGEOUT did: 1 MiB more in swap, no fault.
        counters[5] = (counters[5][0] + amount_bytes / 2 ** 20,
                       counters[5][1])
    host.mechanism.reclaim = reclaim
    clock.now = 240
    host.observe('vm', {first + 10}, (), window_s=60)
    assert host.period('vm', memory, 4, 1000, False).paged_out_mb == 1
    # 64 pages of the 256 paged out came back by 64 major faults.
    clock.now = 300
    counters[5] = (0.75, 164)
    assert host.period('vm', memory, 4, 1000,
                       False).promotions_per_min == pytest.approx(64)


def test_a_block_that_came_back_is_held_warm_then_longer():
    counters = {5: (0.0, 100)}
    back = set()
    host, clock = _host_reclaim(
        counters, refaulted=lambda pid, blocks: back & set(blocks))
    start = 512 * 4096 * 64
    first = start // 4096
    block = first // 512
    memory = hypervisor.GuestMemory(pid=5, start=start,
                                    length=4096 * 4096, method='test')
    idle = {first + 10}
    for t in (60, 120, 180):
        clock.now = t
        host.observe('vm', idle, (), window_s=60)
    host.period('vm', memory, 4, 1000, False)

    def period(t):
        clock.now = t
        host.observe('vm', idle, (), window_s=60)
        host.period('vm', memory, 4, 1000, False)
        calls = host.mechanism.calls[:]
        host.mechanism.calls.clear()
        return calls
    paged = [([(first, 256)], 256 * 4096)]
    assert period(240) == paged
    assert host._vms['vm'].out == {block: [(first, 256)]}
    # A page of it is back: warm for the cold age (120 s), not watched.
    back.add(block)
    assert period(300) == []
    assert host._vms['vm'].warm == {block: (420, 1)}
    assert host._vms['vm'].out == {}
    # Its sample is cold again (its block idle since 0) but the block
    # is held warm.
    assert host._vms['vm'].cold.cold(360) == [first + 10]
    assert period(360) == []
    # Paged out once the hold is over; back again: warm twice as long.
    assert period(420) == paged
    assert period(480) == []
    assert host._vms['vm'].warm == {block: (480 + 240, 2)}


def test_no_swap_pages_nothing_out_and_says_why():
    counters = {5: (0.0, 100)}
    host, clock = _host_reclaim(counters,
                                swap_reason=lambda: 'no swap space')
    memory = hypervisor.GuestMemory(pid=5, start=0, length=4096 * 4096,
                                    method='test')
    host.observe('vm', {10}, (), window_s=300)
    host.period('vm', memory, 4, 1000, False)
    clock.now = 60
    result = host.period('vm', memory, 4, 1000, False)
    assert result.reason == 'no swap space'
    assert host.mechanism.calls == []


def test_a_vm_gone_mid_reclaim_raises_domain_gone():
    host, _ = _host_reclaim({})
    memory = hypervisor.GuestMemory(pid=5, start=0, length=4096 * 4096,
                                    method='test')
    with pytest.raises(hypervisor.DomainGone):
        host.period('vm', memory, 4, 1000, False)
    host.forget('vm')
    assert 'vm' not in host._vms


def test_reclaim_off_by_default():
    host = reclaim.HostReclaim(CONF)
    assert not host.enabled and not host.needs_idle_pages
    assert host.period('vm', None, 4, 1000, False) is None
