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

"""A grant born partly in the local tier, as memagg-scheduler makes one
when the donors are short ([reservoir] local_tier): memagg-compute creates
its export with only the slabs on donors listed (attach_grant), and real
memagg-swapd processes serve it. Writes and reads across every slab come
back whole; the local slabs' pages stay in the local copy and never reach
the donor, each tier's ledger (EXPORT_STATS' l1_* and l2_*) counting
exactly the pages of the slabs it holds; a local slab promoted later onto
a slab a second donor lends then (one that lends the grant nothing yet: a
donor lends a grant one region, which takes no new slabs) is read from
there, with the same data.

A local copy whose filesystem fills (a 6 MiB tmpfs under a 16 MiB disk):
writes to slabs on the donor stand there, the slab turning stale (its
copy missed them); writes to local slabs fail with ENOSPC; nothing
written reads back wrong, across a crash of the consumer's memagg-swapd,
and once the donor dies too, the stale slab's reads fail rather than
serve what its copy has.

qemu-io is the NBD client; the three memagg-swapd processes stand for the
donor hosts and the consumer host.
"""
import os
import subprocess

import pytest

from memagg.compute import swapd
from memagg.tests.functional import test_swapd_nbd
from memagg.tests.functional import two_hosts

pytestmark = [pytest.mark.functional]

MIB = 1 << 20
SLAB = 4 * MIB
GRANT = '6a7b8c9d-0e1f-4a2b-8c3d-4e5f6a7b8c9d'
KEY = '5c' * 32
# Slabs 0 and 1 on the donor, 2 and 3 in the local tier.
ON_DONOR, LOCAL = [0, 1], [2, 3]
PAGES = SLAB // 4096
# A sequential write of the whole disk, a byte of its own per slab: each
# tier's ledger then holds exactly its slabs' pages.
WRITES = [(0x11 + slab, slab * SLAB, SLAB) for slab in ON_DONOR + LOCAL]


def _on_donors(client):
    described = client.export_describe(GRANT)
    return sorted(set(s['index'] for s in described['slabs'])
                  - set(described.get('local_slabs', ())))


def _reads():
    return ['read -P 0x%02x %d %d' % w for w in WRITES]


def test_a_grant_born_in_the_local_tier_is_served_and_promoted():
    test_swapd_nbd._require('qemu-io')
    with two_hosts.donor_and_consumer('memagg-l2-', 16) as (donor, consumer):
        lent = donor.client().grant_alloc(GRANT, KEY, SLAB, ON_DONOR)
        table = [{'index': s['index'], 'endpoint': lent['endpoint'],
                  'remote_addr': s['remote_addr'], 'rkey': lent['rkey']}
                 for s in lent['slabs']]
        client = consumer.client()
        export = client.export_create(GRANT, KEY, 4 * SLAB, SLAB,
                                      consumer.local_copy('l2.img'), table)
        # The table lists the slabs on donors; the others are local.
        assert _on_donors(client) == ON_DONOR

        test_swapd_nbd.qemu_io(export['socket'], GRANT, *(
            ['write -P 0x%02x %d %d' % w for w in WRITES] + ['flush']))
        test_swapd_nbd.qemu_io(export['socket'], GRANT, *_reads())
        stats = client.export_stats(GRANT)
        # Each tier holds what was written to its slabs: only the donor's
        # slabs' pages went to it.
        assert (stats['l1_used'], stats['l2_used']) == (2 * PAGES,
                                                        2 * PAGES), stats
        assert (stats['l1_puts'], stats['l2_puts']) == (2 * PAGES,
                                                        2 * PAGES), stats
        assert stats['remote_errors'] == 0, stats
        # Only the donor's slabs' bytes crossed to it, written then read.
        assert (stats['remote_write_bytes'], stats['remote_read_bytes']) == (
            2 * SLAB, 2 * SLAB), stats

        # The donor that lends slabs 0-1 takes no new slab of the grant.
        with pytest.raises(swapd.SwapdError) as refused:
            donor.client().grant_alloc(GRANT, KEY, SLAB, [2])
        assert refused.value.errno_name == 'EEXIST'
        # A promotion gives slab 2 a slab of a donor new to the grant.
        other = two_hosts.Swapd('donor2', os.path.dirname(donor.dir),
                                capacity_mb=16)
        other.start()
        try:
            again = other.client().grant_alloc(GRANT, KEY, SLAB, [2])
            _promote_and_read(client, export, again)
        finally:
            assert other.stop() == 0, other.log()


def _promote_and_read(client, export, again):
    """Promote slab 2 onto ``again`` (the new donor's grant_alloc
    answer) and read every slab back: 3 of 4 from donors now."""
    [slab] = again['slabs']
    copied = client.export_promote(GRANT, {
        'index': 2, 'endpoint': again['endpoint'],
        'remote_addr': slab['remote_addr']})
    assert copied == PAGES
    assert _on_donors(client) == ON_DONOR + [2]
    before = client.export_stats(GRANT)
    # The promotion's copy counts as bytes written to donors.
    assert before['remote_write_bytes'] == 3 * SLAB, before
    test_swapd_nbd.qemu_io(export['socket'], GRANT, *_reads())
    after = client.export_stats(GRANT)
    assert (after['l1_used'], after['l2_used']) == (3 * PAGES,
                                                    PAGES), after
    assert after['l1_moved_in'] == after['l2_moved_out'] == PAGES
    # Slab 2's reads now go to the donor: 3 of the 4 slabs' reads.
    assert (after['l1_gets'] - before['l1_gets'],
            after['l2_gets'] - before['l2_gets']) == (3 * PAGES, PAGES)
    assert after['remote_read_bytes'] - before['remote_read_bytes'] == \
        3 * SLAB, after
    assert after['remote_errors'] == 0, after


def _qemu_io_fails(sock, command):
    """Run one qemu-io command on the export, which must fail: its
    output."""
    proc = subprocess.run(
        ['qemu-io', '-f', 'raw', 'nbd+unix:///memagg-swap-%s?socket=%s'
         % (GRANT, sock), '-c', command],
        capture_output=True, text=True, timeout=120)
    out = proc.stdout + proc.stderr
    assert 'failed' in out.lower(), out
    return out


def test_a_local_copy_that_fills_leaves_writes_on_the_donor():
    test_swapd_nbd._require('qemu-io')
    with two_hosts.donor_and_consumer('memagg-full-', 16) as (donor,
                                                              consumer):
        full = consumer.local_copy('full')
        os.makedirs(full)
        subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=6m',
                        'memagg-test-full', full], check=True)
        try:
            _fill_the_copy(donor, consumer, os.path.join(full, 'copy.img'))
        finally:
            # Lazily: the consumer still holds the copy open.
            subprocess.run(['umount', '-l', full], check=True)


def _fill_the_copy(donor, consumer, local):
    lent = donor.client().grant_alloc(GRANT, KEY, SLAB, ON_DONOR)
    table = [{'index': s['index'], 'endpoint': lent['endpoint'],
              'remote_addr': s['remote_addr'], 'rkey': lent['rkey']}
             for s in lent['slabs']]
    client = consumer.client()
    sock = client.export_create(GRANT, KEY, 4 * SLAB, SLAB, local,
                                table)['socket']
    # Slab 0 fits in the copy, slab 1 only in part: both stand.
    written = ['write -P 0x%02x %d %d' % w for w in WRITES[:2]]
    test_swapd_nbd.qemu_io(sock, GRANT, *written)
    stats = client.export_stats(GRANT)
    assert (stats['stale_slabs'], stats['remote_errors']) == (1, 0), stats
    assert client.export_describe(GRANT)['stale_slabs'] == [1]
    # A local slab has nowhere else to go.
    assert 'No space left' in _qemu_io_fails(sock, 'write -P 0x13 %d 1M'
                                             % (2 * SLAB))
    reads = _reads()[:2]
    test_swapd_nbd.qemu_io(sock, GRANT, *reads)
    # Slab 1 may not leave its donor, which alone has all of it.
    with pytest.raises(swapd.SwapdError) as refused:
        client.export_reclaim(GRANT, [1])
    assert refused.value.errno_name == 'EBUSY'
    assert 'stale' in refused.value.message

    # A crash of the consumer's memagg-swapd: restored, still stale.
    consumer.kill()
    consumer.start()
    client = consumer.client()
    assert client.export_describe(GRANT)['stale_slabs'] == [1]
    test_swapd_nbd.qemu_io(sock, GRANT, *reads)

    # The donor dies: slab 0 comes from the copy; slab 1's reads fail,
    # never the copy's incomplete pages in their place.
    donor.kill()
    test_swapd_nbd.qemu_io(sock, GRANT, reads[0])
    assert 'Input/output error' in _qemu_io_fails(
        sock, 'read -P 0x12 %d %d' % (SLAB, SLAB))
    assert client.export_stats(GRANT)['remote_errors'] >= 1
    client.export_drop(GRANT, delete=True)
    donor.start()       # both stop cleanly at the end
