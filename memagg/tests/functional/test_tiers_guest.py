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

"""A grant's slabs move between the tiers under a guest that swaps to
them, and the guest notices nothing (issue 38, points 1 and 5).

A real TCG guest (memagg/demo/image) swaps to four 64 MiB slabs a donor
memagg-swapd lends over loopback TCP, attached by memagg-compute's own
code (swapping_guest, as test_swapd_crash_guest). While it reads its data
back through the disk, memagg-compute demotes every slab (reclaim_slabs:
served from the local copy, then the donor frees them, as
memagg-scheduler has it do), and then, the guest reading on, promotes
them back (the donor lends the grant's slabs again, promote_slab copies
each there while the guest runs). The sum of the guest's data holds,
its swap I/O never fails, and afterwards its reads come from the donor
again. Each tier's ledger (EXPORT_STATS' l1_* and l2_*) adds up to what
the tier stores at every step.

The second test drives a deterministic sequential workload (point 4):
the guest writes a fixed amount of data that goes to its swap disk in
order, a grant whose first half is on the donor and second half in the
local tier (as memagg-scheduler grants it when the donors are short),
and every report memagg-compute makes meanwhile (RemoteMemory.ledgers,
what its collector puts in the report) reconciles with the slabs each
tier holds: no tier holds more than its slabs, the local tier takes
pages only once the donor's slabs are full, and at the end both tiers
hold what the guest swapped out, to within a slab.

The third test breaks a promotion in the middle (point 5): the donor
is stopped (SIGSTOP) once the copy has begun, so the copy waits on it,
then it dies; later the consumer's memagg-swapd is SIGKILLed the same way
and started again. Either way the slab stays in the local copy, nothing
the guest wrote is lost, and the ledger holds.

Fakes: memagg-scheduler (FakeScheduler of the unit tests: the steps it
takes are made here, with memagg-compute's own calls); the two hosts are
two memagg-swapd processes on this machine. The guest runs under this
machine's libvirtd: the host lane.
"""
import signal
import threading

import libvirt
import pytest

from memagg.tests.functional import swapping_guest
from memagg.tests.functional import two_hosts as two_hosts_module
from memagg.tests import polling
from memagg.tests.unit.compute import remote_fixtures as helpers

pytestmark = [pytest.mark.functional, pytest.mark.slow, pytest.mark.host]

GRANT = '3f1e2d4c-5b6a-4798-8a0b-1c2d3e4f5a6b'
SLABS = list(range(swapping_guest.SLABS))
SLAB_PAGES = swapping_guest.SLAB_MB * swapping_guest.MIB // 4096


@pytest.fixture
def daemons():
    with two_hosts_module.donor_and_consumer(
            'memagg-tiers-', swapping_guest.SLAB_MB * swapping_guest.SLABS,
            socket_user=two_hosts_module.QEMU_USER) as pair:
        yield pair


def _ledger_holds(stats):
    """Each tier's ledger adds up to what it stores, to within a slab (the
    counters are read one by one while the guest's I/O goes on)."""
    for tier in ('l1', 'l2'):
        counted = (stats[tier + '_puts'] + stats[tier + '_moved_in'] -
                   stats[tier + '_flushes'] - stats[tier + '_moved_out'] -
                   stats[tier + '_evicts'])
        assert abs(stats[tier + '_used'] - counted) <= SLAB_PAGES, (
            tier, stats)
        assert stats[tier + '_evicts'] == 0, stats
    return stats


def _swaps_in(guest, pages):
    """Wait until the guest has swapped in ``pages`` more pages."""
    start = guest.heartbeat()['pswpin']
    polling.wait_for(lambda: guest.heartbeat()['pswpin'] >= start + pages,
                     300, interval=0.2,
                     message='%d pages swapped in' % pages)


@pytest.mark.timeout(1500)
def test_slabs_demoted_and_promoted_under_a_swapping_guest(
        conf, daemons, qemu_workdir):
    donor, consumer = daemons
    with swapping_guest.guest_on(conf, donor, consumer, qemu_workdir,
                                 'memagg-tiers', GRANT) as on:
        guest, lmc, lender = on.guest, on.lmc, on.lender
        checksum = swapping_guest.swap_out(on)
        client = consumer.client()
        stored = _ledger_holds(client.export_stats(GRANT))
        # All on donors so far.
        assert stored['l1_used'] > 0 and stored['l2_used'] == 0, stored

        # Demoted while the guest reads its data back: its pages come from
        # the local copy, and the donor frees the slabs.
        mark = swapping_guest.check_swapping_in(guest)
        assert lmc.reclaim_slabs(GRANT, SLABS) == {
            'reclaimed': len(SLABS)}
        assert lender.free_slabs(GRANT, SLABS) == {'freed': len(SLABS)}
        assert client.export_describe(GRANT)['local_slabs'] == SLABS
        demoted = _ledger_holds(client.export_stats(GRANT))
        assert demoted['l1_used'] == 0, demoted
        assert demoted['l2_moved_in'] == demoted['l1_moved_out'] > 0, demoted
        local_reads = demoted['local_reads']
        _swaps_in(guest, 256)
        assert client.export_stats(GRANT)['local_reads'] > local_reads

        # Promoted back while it reads on: the donor lends the slabs
        # again and each is copied there under the guest's I/O.
        again = lender.prepare_slabs(GRANT, helpers.SECRET,
                                     swapping_guest.SLAB_MB, SLABS)
        assert [s['index'] for s in again['slabs']] == SLABS
        copied = [lmc.promote_slab(GRANT, {
            'index': s['index'], 'endpoint': again['endpoint'],
            'remote_addr': s['remote_addr']})['pages']
            for s in again['slabs']]
        assert sum(copied) > 0, copied
        assert 'local_slabs' not in client.export_describe(GRANT)
        assert guest.wait_check(mark, 600) == checksum

        # Its reads come from the donor again, and its data holds.
        stats = _ledger_holds(client.export_stats(GRANT))
        assert stats['l1_moved_in'] > 0 and stats['l2_used'] == 0, stats
        assert guest.check(timeout=600) == checksum
        after = client.export_stats(GRANT)
        assert after['local_reads'] == stats['local_reads'], (stats, after)
        assert after['reads'] > stats['reads'], (stats, after)
        assert after['remote_errors'] == 0, after
        _ledger_holds(after)
        assert guest.dom.state()[0] == libvirt.VIR_DOMAIN_RUNNING
        print('tiers under a swapping guest: %s pages copied back per '
              'slab, sum %s kept; stats after %s' % (copied, checksum,
                                                     after))


# The sequential workload's grant: 8 slabs of 16 MiB, 0-3 on the donor
# (L1), 4-7 in the local tier (L2); the guest swaps out past L1.
SEQ_SLAB_MB = 16
SEQ_SLABS = 8
SEQ_LOCAL = list(range(4, 8))
SEQ_SLAB_PAGES = SEQ_SLAB_MB * swapping_guest.MIB // 4096
# Ballooned to BALLOON_MB the guest keeps about 40 MiB of it in RAM: some
# 80 MiB go to the disk, past L1 (64 MiB), well short of its 128 (the
# guest would meet the OOM killer).
SEQ_DATA_MB = 120


def _reconciles(ledger):
    """One report's ledger (a GrantLedger) against the slabs each tier
    holds: the counts add up, no tier holds more than its slabs, and the
    local tier has pages only once the donor's slabs are full, to within
    a slab; nothing moved or was dropped. The ledger, as a dict."""
    stats = ledger.as_dict()
    held = {'l1': SEQ_SLABS - len(SEQ_LOCAL), 'l2': len(SEQ_LOCAL)}
    for tier, slabs in held.items():
        counted = stats[tier + '_puts'] - stats[tier + '_flushes']
        assert abs(stats[tier + '_used'] - counted) <= SEQ_SLAB_PAGES, (
            tier, stats)
        assert stats[tier + '_used'] <= slabs * SEQ_SLAB_PAGES, (tier, stats)
        for count in ('moved_in', 'moved_out', 'evicts'):
            assert stats['%s_%s' % (tier, count)] == 0, (tier, stats)
    if stats['l2_used']:
        assert stats['l1_used'] >= (held['l1'] - 1) * SEQ_SLAB_PAGES, stats
    return stats


class _Reports(threading.Thread):
    """memagg-compute's reports of the grant's ledger, one every
    ``interval`` s until stopped, each checked by ``_reconciles``: the
    ledgers seen, and the first failure."""

    def __init__(self, lmc, interval=0.2):
        super().__init__(daemon=True)
        self.lmc = lmc
        self.interval = interval
        self.seen = []
        self.failure = None
        self.stopping = threading.Event()

    def run(self):
        while not self.stopping.wait(self.interval):
            try:
                [ledger] = self.lmc.ledgers()
                self.seen.append(_reconciles(ledger))
            except AssertionError as exc:
                self.failure = exc
                return

    def stop(self):
        self.stopping.set()
        self.join()
        if self.failure is not None:
            raise self.failure


def _swap_used_pages(guest, dev):
    """The pages the guest holds on ``dev`` once two heartbeats in a row
    agree (its swap-out is over)."""
    last = []

    def settled():
        beat = guest.heartbeat()
        used = beat['swaps'].get(dev, {}).get('used_kb') if beat else None
        seen = (beat['n'], used) if beat else None
        if seen and (not last or last[-1][0] != seen[0]):
            last.append(seen)
        return (len(last) >= 2 and last[-1][1] == last[-2][1]
                and last[-1][1])
    return polling.wait_for(settled, 300, interval=0.5,
                            message='the guest\'s swap use settled') // 4


@pytest.mark.timeout(1500)
def test_the_ledger_reconciles_with_the_slabs_held_at_every_report(
        conf, daemons, qemu_workdir):
    donor, consumer = daemons
    with swapping_guest.guest_on(conf, donor, consumer, qemu_workdir,
                                 'memagg-tiers-ledger', GRANT,
                                 slab_mb=SEQ_SLAB_MB, slabs=SEQ_SLABS,
                                 local=SEQ_LOCAL) as on:
        guest, lmc = on.guest, on.lmc
        described = consumer.client().export_describe(GRANT)
        assert sorted(set(s['index'] for s in described['slabs'])
                      - set(described.get('local_slabs', ()))) == [
            index for index in range(SEQ_SLABS)
            if index not in SEQ_LOCAL], described
        # What memagg-compute's period does before its report.
        lmc.recover()
        reports = _Reports(lmc)
        reports.start()
        try:
            on.driver.set_balloon(guest.uuid, swapping_guest.BALLOON_MB)
            checksum = guest.fill(SEQ_DATA_MB, timeout=600, cold=True)
            polling.wait_for(
                lambda: reports.seen and reports.seen[-1]['l2_used']
                >= SEQ_SLAB_PAGES // 2, 300, interval=0.5,
                message='the local tier holding half a slab')
            swapped = _swap_used_pages(guest, on.dev)
        finally:
            reports.stop()
        [ledger] = lmc.ledgers()
        stats = _reconciles(ledger)
        # Both tiers hold what the guest swapped out (and the swap
        # header), the donor's slabs full.
        held = stats['l1_used'] + stats['l2_used']
        assert abs(held - swapped) <= SEQ_SLAB_PAGES, (swapped, stats)
        assert stats['l1_used'] >= 3 * SEQ_SLAB_PAGES, stats
        assert guest.check(timeout=600) == checksum
        [ledger] = lmc.ledgers()
        after = _reconciles(ledger)
        assert after['l1_gets'] > stats['l1_gets'], (stats, after)
        assert after['l2_gets'] > stats['l2_gets'], (stats, after)
        print('ledger of a sequential workload over both tiers: %d '
              'reports reconciled; %d pages swapped out, held %d on the '
              'donor and %d in the local tier; after the read back %s' % (
                  len(reports.seen), swapped, stats['l1_used'],
                  stats['l2_used'], after))


def _promote_held(lmc, donor, consumer, lender, index):
    """Start promoting slab ``index`` into a slab ``lender`` (the donor's
    RemoteMemory) prepares, with the donor stopped: the copy waits on it.
    Returns (the promoting thread, what it raised or returned)."""
    again = lender.prepare_slabs(GRANT, helpers.SECRET,
                                 swapping_guest.SLAB_MB, [index])
    [slab] = again['slabs']
    donor.proc.send_signal(signal.SIGSTOP)
    outcome = []
    mark = consumer.log().count('promoting slab %d' % index)

    def promote():
        try:
            outcome.append(lmc.promote_slab(GRANT, {
                'index': index, 'endpoint': again['endpoint'],
                'remote_addr': slab['remote_addr']}))
        except Exception as exc:
            outcome.append(exc)

    thread = threading.Thread(target=promote, daemon=True)
    thread.start()
    polling.wait_for(
        lambda: consumer.log().count('promoting slab %d' % index) > mark,
        60, interval=0.1, message='the promotion of slab %d under way'
        % index)
    return thread, outcome


@pytest.mark.timeout(1500)
def test_a_promotion_broken_by_the_donor_or_the_consumer_loses_nothing(
        conf, daemons, qemu_workdir):
    donor, consumer = daemons
    with swapping_guest.guest_on(conf, donor, consumer, qemu_workdir,
                                 'memagg-tiers-faults', GRANT) as on:
        guest, lmc, lender = on.guest, on.lmc, on.lender
        checksum = swapping_guest.swap_out(on)
        assert lmc.reclaim_slabs(GRANT, SLABS) == {
            'reclaimed': len(SLABS)}
        assert lender.free_slabs(GRANT, SLABS) == {'freed': len(SLABS)}
        client = consumer.client()

        # The donor dies in the middle of the copy: the promotion fails,
        # the slab stays local.
        thread, outcome = _promote_held(lmc, donor, consumer, lender, 0)
        assert donor.kill() == -9
        thread.join(120)
        assert outcome and isinstance(outcome[0], Exception), outcome
        assert 0 in client.export_describe(GRANT)['local_slabs']
        assert guest.check(timeout=600) == checksum
        _ledger_holds(client.export_stats(GRANT))
        donor.start()

        # The consumer's memagg-swapd dies in the middle of the copy and
        # comes back: the table on disk still says the slab is local.
        thread, outcome = _promote_held(lmc, donor, consumer, lender, 0)
        resumer = swapping_guest.Resumer(lmc, guest.dom)
        resumer.start()
        try:
            assert consumer.kill() == -9
            donor.proc.send_signal(signal.SIGCONT)
            thread.join(120)
            assert outcome and isinstance(outcome[0], Exception), outcome
            consumer.start()
            client = consumer.client()
            assert 0 in client.export_describe(GRANT)['local_slabs']
            assert guest.check(timeout=600) == checksum
        finally:
            resumer.stop()
        assert lender.free_slabs(GRANT, [0]) == {'freed': 1}
        stats = _ledger_holds(client.export_stats(GRANT))
        assert stats['l1_used'] == 0 and stats['remote_errors'] == 0, stats
        assert guest.dom.state()[0] == libvirt.VIR_DOMAIN_RUNNING
        print('promotions broken by the donor and the consumer: sum %s '
              'kept; the VM paused meanwhile: %s; stats after %s' % (
                  checksum, libvirt.VIR_DOMAIN_PAUSED in resumer.states,
                  stats))
