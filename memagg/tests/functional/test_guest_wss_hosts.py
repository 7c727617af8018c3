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

"""memagg-compute's estimates on guests as production hosts run them: a
guest whose RAM is QEMU's default (anonymous memory with transparent huge
pages, one accessed bit per 2 MiB on the host) follows its hot set phase by
phase; six guests under one memagg-compute, each with its own hot set, are
all estimated within tolerance in the same periods, by one kdamond."""
import os
import time

import pytest

from memagg.tests.functional.guest_fixtures import PeriodLoop
from memagg.demo import guest as vm
from memagg.tests import damon
from memagg.tests import polling

# The host lane (memagg/tests/lanes.py): counts memagg's kdamonds; a loop
# over every domain.
pytestmark = [
    pytest.mark.host,
    pytest.mark.functional, pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0,
                       reason='PFNs in pagemap and DAMON need root')]

PERIOD = 3


def within(estimate, truth):
    """The phase test's tolerance (test_guest_wss): +-20 % or +-24 MiB,
    whichever is wider."""
    return estimate is not None and abs(estimate - truth) <= max(
        0.2 * truth, 24)


@pytest.fixture
def loop_conf(conf):
    conf.config(collect_interval=PERIOD, balloon_stats_period=2,
                group='compute')
    conf.config(estimator='badis', sampler_backend='auto', group='wss')
    # The tests check the measurement, not Badis' pinned-page cushion.
    conf.config(min_margin_mb=0, group='wss')
    return conf


def _settled(loop, uuids, first, periods=3):
    """The reports from index ``first`` on in which every guest of
    ``uuids`` has had ``periods`` estimates: {uuid: [InstanceReport]} of
    the same ``periods`` reports, or None while some guest lacks one."""
    assert not loop.errors, loop.errors
    reports = [r for r in loop.reports[first:]
               if all(loop.instance(r, u) is not None
                      and loop.instance(r, u).wss_mb is not None
                      for u in uuids)]
    if len(reports) < periods:
        return None
    return {u: [loop.instance(r, u) for r in reports[:periods]]
            for u in uuids}


def test_thp_backed_guest_follows_its_phases(virt, qemu_workdir, loop_conf):
    """The sampler splits the huge pages under its samples
    ([wss] sampler_split_huge_pages, on by default): without that, one
    accessed bit per 2 MiB read these hot sets as 111-116/201-208/96-106
    MiB."""
    # The floor leaves the guest room for its 150 MiB phase, as in the
    # memfd guest's phase test.
    loop_conf.config(min_guest_mb=232, group='local_policy')
    guest = vm.Guest(virt, qemu_workdir, 'memagg-wss-thp', memory_mb=256,
                     swap_mb=128, memfd=False)
    loop = None
    began = time.monotonic()
    try:
        guest.start()
        loop = PeriodLoop(PERIOD, 'memagg-wss-').start()
        measured = []
        backends = set()
        for hot in (60, 150, 40):
            guest.set_hot(hot)
            first = len(loop.reports) + 1
            rows = polling.wait_for(
                lambda: _settled(loop, [guest.uuid], first), 8 * PERIOD + 30,
                interval=0.5, message='three periods of phase %d' % hot)
            estimates = [r.wss_mb for r in rows[guest.uuid]]
            measured.append((hot, estimates))
            backends.update(r.sampler_backend for r in rows[guest.uuid])
        print('THP guest phases (hot MiB, estimates):', measured,
              'in %.0f s with' % (time.monotonic() - began), backends)
        # clear_refs reads the whole range and splits nothing (memagg-
        # compute falls back to it when another process holds DAMON).
        assert backends <= {'page_idle', 'damon_memcg', 'damon_paddr',
                            'damon_vaddr'}, backends
        assert all(within(est[-1], hot) for hot, est in measured), measured
        beats = guest.heartbeats()
        polling.wait_for(lambda: guest.heartbeats() > beats, 30,
                         interval=0.5, message='heartbeat of the guest')
    finally:
        if loop is not None:
            loop.stop()
        guest.destroy()


# Six guests on 2 cores under TCG: small (160 MiB, no disk), each with a
# hot set of its own. At 128 MiB the 68 MiB guest had 3 MiB free (its hot
# set is tmpfs, and the guest has no swap): its reader could be killed for
# memory, and the estimate then fell to what the guest's kernel touches.
GUESTS = 6
SMALL_MB = 160
HOT_SETS = (8, 20, 32, 44, 56, 68)


def _beat(guest):
    """The reader's passes and free memory of the guest's last heartbeat."""
    beat = guest.heartbeat() or {}
    return {k: beat.get(k) for k in ('n', 'passes', 'free_kb')}


def test_six_guests_under_one_compute_each_within_tolerance(
        virt, qemu_workdir, loop_conf):
    # No balloon moves: the subject is six estimates in the same periods.
    loop_conf.config(min_guest_mb=SMALL_MB, group='local_policy')
    guests = [vm.Guest(virt, qemu_workdir, 'memagg-wss-six-%d' % k,
                       memory_mb=SMALL_MB)
              for k in range(GUESTS)]
    loop = None
    began = time.monotonic()
    try:
        for guest in guests:
            guest.dom = virt.createXML(guest.xml)
        for guest in guests:
            guest.wait_console(r'MEMAGG READY', 240)
        booted = time.monotonic() - began
        # All six write their hot sets at once.
        marks = [len(g.console_text()) for g in guests]
        for guest, hot in zip(guests, HOT_SETS):
            guest.send('hot %d' % hot)
        for guest, hot, mark in zip(guests, HOT_SETS, marks):
            guest.wait_console(r'MEMAGG PHASE \d+ hot=%d\b' % hot, 120,
                               after=mark)
        loop = PeriodLoop(PERIOD, 'memagg-wss-').start()
        before = [_beat(g) for g in guests]
        uuids = [g.uuid for g in guests]
        # memagg's kdamonds, counted at each look at the reports.
        kdamonds = []

        def settled():
            kdamonds.append(len(damon.memagg_running()))
            return _settled(loop, uuids, 1)

        # From the second period on: the first has no sampler window yet.
        # A period over six TCG guests on 2 cores took 7-22 s here.
        try:
            rows = polling.wait_for(
                settled, 240,
                interval=0.5, message='three periods of all six guests')
        except AssertionError:
            raise AssertionError('not three periods of all six: %s' % [
                [(i.wss_mb, i.estimator) for i in r.instances]
                for r in loop.reports])
        seen = {g.name: (hot, [(r.wss_mb, r.estimator)
                               for r in rows[g.uuid]], _beat(g))
                for g, hot in zip(guests, HOT_SETS)}
        backends = {r.sampler_backend for rs in rows.values() for r in rs}
        print('six guests (hot MiB, [(estimate, estimator)], last '
              'heartbeat), booted in %.0f s, done in %.0f s, with %s and '
              'at most %d kdamond(s):'
              % (booted, time.monotonic() - began, backends,
                 max(kdamonds)), seen)
        # One kdamond watches the six (clear_refs here would mean another
        # process held DAMON).
        assert backends == {'damon_paddr'}, backends
        assert max(kdamonds) == 1, kdamonds
        # The subject is the estimate of a hot set being read: every
        # guest's reader kept passing over its set meanwhile.
        stalled = [g.name for g, b in zip(guests, before)
                   if (seen[g.name][2]['passes'] or 0) <= (b['passes'] or 0)]
        assert not stalled, 'readers stopped in %s: %s\n%s' % (
            stalled, seen, '\n'.join(
                'console of %s:\n%s' % (g.name, g.console_text()[-2500:])
                for g in guests if g.name in stalled))
        # Every guest within tolerance in the last of the same periods.
        wrong = [g for g, hot in zip(guests, HOT_SETS)
                 if not within(seen[g.name][1][-1][0], hot)]
        assert not wrong, '%s\n%s' % (seen, '\n'.join(
            'console of %s:\n%s' % (g.name, g.console_text()[-2500:])
            for g in wrong))
    finally:
        if loop is not None:
            loop.stop()
        for guest in guests:
            guest.destroy()
