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

"""Host-side reclaim (issue 19, point 4) on a real QEMU guest (TCG) under
libvirt, without a balloon device, its RAM anonymous memory with
transparent huge pages (QEMU's default): memagg-compute's loop with the
senpai controller pages the guest's cold memory out into a swap file the
test adds (with zswap off, then on), QEMU's resident memory falls by at
least half of it within a bounded number of periods, the guest's data keeps its
checksum, promotions stay under the SLO while the hot set is steady, and
the controller backs off within two periods when the hot set grows."""

import pytest

from memagg.drivers.reclaim import base as mechanism_base
from memagg.tests import host_swap
from memagg.tests import leftovers
from memagg.tests import polling
from memagg.tests.functional.guest_fixtures import PeriodLoop
from memagg.demo import guest as vm

# The host lane (memagg/tests/lanes.py): host swap and zswap, and a loop over
# every domain.
pytestmark = [pytest.mark.functional, pytest.mark.slow, pytest.mark.host]

PERIOD = 3
MEMORY_MB = 384
COLD_PERIODS = 20       # bound on the periods the cold memory takes to go


@pytest.fixture
def loop_conf(conf):
    conf.config(collect_interval=PERIOD, group='compute')
    conf.config(sampler_backend='auto', group='wss')
    conf.config(controller='senpai', cold_age_s=2 * PERIOD, grow_mb=32,
                group='host_reclaim')
    return conf


class Recording(PeriodLoop):
    """The loop keeping every PeriodResult (their VmResult.reclaim) and
    every (MiB in swap, major faults) host reclaim read of QEMU."""

    def __init__(self, interval, guests):
        super().__init__(interval, guests)
        self.results = []
        self.counters = []
        run_period = self.memory.run_period
        read_counters = self.memory.reclaim._counters

        def recorded(*args, **kwargs):
            result = run_period(*args, **kwargs)
            self.results.append(result)
            return result

        def counters(pid):
            swap_mb, majflt = read_counters(pid)
            self.counters.append((round(swap_mb, 2), majflt))
            return swap_mb, majflt
        self.memory.run_period = recorded
        self.memory.reclaim._counters = counters

    def reclaims(self, uuid, since=0):
        return [r.vms[uuid].reclaim for r in self.results[since:]
                if uuid in r.vms and r.vms[uuid].reclaim is not None]


# The cold age: 2 periods with the swap file; 10 with zswap. A swap file
# hides the guest's own refaults of pages it touches less often than the
# cold age (its kernel image, a few other 2 MiB blocks): they stay in the
# swap cache and come back by minor faults (461 pages back for 7 major
# faults in 20 periods). zswap frees them at once, each refault is a
# promotion (180 back, 286 faults), and 2 periods held promotions near 100
# per min against an SLO of 34; 10 periods leave those blocks warm.
@pytest.mark.parametrize('zswap,cold_periods', [(False, 2), (True, 10)],
                         ids=['swapfile', 'zswap'])
def test_cold_memory_of_a_guest_without_balloon_goes_to_host_swap(
        virt, qemu_workdir, loop_conf, zswap, cold_periods):
    loop_conf.config(cold_age_s=cold_periods * PERIOD, group='host_reclaim')
    guest = vm.Guest(virt, qemu_workdir, 'memagg-reclaim-%s'
                     % ('zswap' if zswap else 'swapfile'),
                     memory_mb=MEMORY_MB, balloon='none', memfd=False)
    loop = None
    try:
        guest.start()
        # 200 MiB touched then given back inside the guest: resident in
        # QEMU, never accessed again. The hot set is 40 MiB and the data
        # 16 MiB (re-read with it).
        guest.set_hot(200)
        checksum = guest.fill(16)
        guest.set_hot(40)
        with host_swap.swap_file(1024, zswap=zswap) as swap_path:
            loop = Recording(PERIOD, 'memagg-reclaim-').start()
            polling.wait_for(lambda: loop.memory.reclaim.enabled
                             and loop.reclaims(guest.uuid), 60,
                             interval=0.5, message='first period')
            pid = loop.memory._vms[guest.uuid].sampler.memory.pid
            rss_before = host_swap.rss_mb(pid)
            vmstat_before = _vmstat()

            def settled():
                assert not loop.errors, loop.errors
                rows = loop.reclaims(guest.uuid)
                last = rows[-1]
                if last.slo_per_min is None:
                    return None
                wss = loop.results[-1].vms[guest.uuid].wss_maxavg_mb
                cold = rss_before - wss
                fallen = rss_before - host_swap.rss_mb(pid)
                # A period reports what was in swap when it began, before its
                # own page-out: wait for the report to catch up with the RSS.
                return (fallen >= cold / 2
                        and last.reclaimed_mb >= cold / 2 - 16
                        and (rows, cold, fallen))
            try:
                rows, cold, fallen = polling.wait_for(
                    settled, (COLD_PERIODS + cold_periods + 2) * PERIOD + 60,
                    interval=1,
                    message='QEMU RSS, and the swap reported, half the cold')
            except AssertionError:
                raise AssertionError(
                    'QEMU RSS %.0f -> %.0f MiB; (limit, in swap, '
                    'promotions/min, SLO, reason) by period: %s; QEMU\'s '
                    '(MiB in swap, major faults) as read: %s; the host\'s '
                    'counters meanwhile: %s; DAMON: %s' % (
                        rss_before, host_swap.rss_mb(pid),
                        [(r.limit_mb, round(r.reclaimed_mb),
                          r.promotions_per_min, r.slo_per_min, r.reason)
                         for r in loop.reclaims(guest.uuid)],
                        loop.counters, _vmstat(vmstat_before),
                        leftovers.snapshot()['damon']))
            assert len(rows) <= COLD_PERIODS + cold_periods + 2, len(rows)
            assert all(r.reason is None for r in rows[2:]), rows
            steady = [r for r in rows if r.promotions_per_min is not None
                      and r.slo_per_min is not None]
            # The hot set stayed put: promotions within the SLO.
            assert all(r.promotions_per_min <= r.slo_per_min
                       for r in steady[-3:]), steady[-3:]
            _check_report(loop, guest.uuid)
            limit = rows[-1].limit_mb
            assert limit > 0
            # The hot set grows over memory now in the host's swap: the
            # controller backs off within two periods.
            grow_at = len(loop.results)
            guest.set_hot(200)

            def backed_off():
                assert not loop.errors, loop.errors
                later = loop.reclaims(guest.uuid, grow_at)
                return any(r.limit_mb < limit for r in later[:3]) and later
            later = polling.wait_for(backed_off, 8 * PERIOD + 60,
                                     interval=0.5,
                                     message='back-off after growth')
            # Its data survived the trip through the host's swap.
            assert guest.check() == checksum
            print('zswap=%s: RSS %.0f MiB, cold %.0f MiB, fell %.0f MiB in '
                  '%d periods; limits %s; after growth %s'
                  % (zswap, rss_before, cold, fallen, len(rows),
                     [r.limit_mb for r in rows],
                     [(r.limit_mb, r.promotions_per_min) for r in later]))
            loop.stop()
            loop = None
        # The test's swap file is off again; the host may have swap of its
        # own (a CI machine had), so that is all there is to check.
        assert swap_path not in mechanism_base.swap_devices()
    finally:
        if loop is not None:
            loop.stop()
        guest.destroy()


def _check_report(loop, uuid):
    """The ComputeReport of a period carries the VM's host reclaim as the
    period found it (the reservoir's share of it: test_reclaim_manager)."""
    n = min(len(loop.reports), len(loop.results)) - 1
    report, period = loop.reports[n], loop.results[n]
    held = period.vms[uuid].reclaim
    instance = loop.instance(report, uuid)
    sample = next(s for s in report.samples if s.instance_uuid == uuid)
    assert (instance.reclaimed_mb, instance.reclaim_mechanism,
            instance.promotion_slo) == (round(held.reclaimed_mb), 'madvise',
                                        held.slo_per_min)
    assert (sample.reclaimed_mb, sample.promotion_rate) == (
        instance.reclaimed_mb, instance.promotion_rate)
    assert instance.reclaimed_mb > 0
    assert report.free_reservoir_mb == max(0, period.reservoir_mb)


_VMSTAT = ('pgmajfault', 'pswpin', 'pswpout', 'zswpin', 'zswpout',
           'pgsteal_kswapd', 'pgsteal_direct', 'workingset_refault_anon',
           'workingset_refault_file', 'drop_pagecache', 'thp_split_page')


def _vmstat(since=None):
    """The host's /proc/vmstat counters that tell who else paged (their
    rise since ``since`` when given)."""
    with open('/proc/vmstat') as f:
        now = {k: int(v) for k, v in (line.split() for line in f)
               if k in _VMSTAT}
    if since is None:
        return now
    return {k: v - since.get(k, 0) for k, v in now.items()}
