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

"""A live migration's swap disk between real memagg-swapd processes
(ALGORITHMS.md §5): host A's memagg-swapd serves an export whose pages are
on three donors; host B's adopts the same slab table (EXPORT_CREATE
adopt=1) with an empty local copy, serves every page from the donors and,
once asked (EXPORT_REBUILD, a migration's finish), rebuilds its copy in the
background, while its guest writes and across kills -9.  QEMU's own NBD
clients (qemu-io, qemu-img) do the I/O.

A donor made unreachable is a stopped process (SIGSTOP): its memory, the
grant's pages, survives, and SIGCONT brings it back.  B's rebuild goes
slab by slab, so a stopped donor of slab 2 holds it at slab 2
deterministically.
"""
import os
import signal
import shutil
import subprocess
import tempfile
import uuid

import pytest

from memagg.compute import swapd as swapd_client
from memagg.tests.functional import test_swapd_nbd
from memagg.tests.functional import two_hosts
from memagg.tests import polling

pytestmark = [pytest.mark.functional]

MIB = 1 << 20
SLAB = 4 * MIB
SLABS = 4
SIZE = SLAB * SLABS
PAGES_PER_SLAB = SLAB // 4096
KEY = 'c5' * 32
DEADLINE = 60

# What the guest wrote on host A: (byte, offset, length); the rest of the
# disk was never written.  Byte 0 is a write of zeros.
WRITTEN_ON_A = [
    (0x11, 0, 64 * 1024), (0x12, MIB, 4096), (0x00, 2 * MIB, 4096),
    (0x13, 3 * MIB + 512, 1024), (0x14, SLAB - 8192, 16384),
    (0x15, 5 * MIB, 256 * 1024),
    (0x21, 8 * MIB, 128 * 1024), (0x22, 10 * MIB, 4096),
    (0x31, 12 * MIB, 64 * 1024), (0x32, 13 * MIB, 8192),
    (0x33, 15 * MIB, 4096),
]


@pytest.fixture(name='hosts')
def hosts_fixture():
    """Make two_hosts.Swapd daemons under one short directory (unix socket
    paths are short); at the end every stopped one is continued, and a
    clean SIGTERM stop is asserted for those still running."""
    test_swapd_nbd._require('qemu-io')
    test_swapd_nbd._require('qemu-img')
    root = tempfile.mkdtemp(prefix='sd', dir='/tmp')
    made = []

    def make(name, capacity_mb=0, fabric_provider=None):
        daemon = two_hosts.Swapd(name, root, capacity_mb=capacity_mb,
                                 fabric_provider=fabric_provider)
        made.append(daemon)
        return daemon

    yield make
    codes = {}
    for daemon in made:
        if daemon.alive():
            daemon.proc.send_signal(signal.SIGCONT)
        codes[daemon.name] = daemon.stop()
    failed = {name: code for name, code in codes.items()
              if code not in (0, None)}
    logs = {d.name: d.log()[-3000:] for d in made if d.name in failed}
    shutil.rmtree(root, ignore_errors=True)
    assert not failed, (failed, logs)


def _stopped(pid):
    """Whether every thread of process pid is in group stop (state T)."""
    for tid in os.listdir('/proc/%d/task' % pid):
        try:
            with open('/proc/%d/task/%s/stat' % (pid, tid)) as f:
                state = f.read().rsplit(')', 1)[1].split()[0]
        except FileNotFoundError:
            continue            # the thread is gone
        if state != 'T':
            return False
    return True


def _sigstop(daemon):
    """Make the daemon unreachable: SIGSTOP, and wait until it holds.

    kill() returns before the process stops: one of its threads (the main
    one, in sigwait) takes the signal and only when it next runs stops the
    others.  Until then they serve what arrives; under load that was a
    donor answering the write that the test sends right after the SIGSTOP
    to make it time out, and the slab did not degrade."""
    daemon.proc.send_signal(signal.SIGSTOP)
    polling.wait_for(lambda: _stopped(daemon.proc.pid), DEADLINE,
                     interval=0.01, message='%s stopped' % daemon.name)


def _apply(image, byte, offset, length):
    image[offset:offset + length] = bytes([byte]) * length


def _pattern_reads(image, lo, hi):
    """qemu-io commands that check image[lo:hi], which is made of uniform
    512-byte sectors."""
    runs = []
    for off in range(lo, hi, 512):
        byte = image[off]
        assert image[off:off + 512] == bytes([byte]) * 512
        if runs and runs[-1][0] == byte and sum(runs[-1][1:]) == off:
            runs[-1][2] += 512
        else:
            runs.append([byte, off, 512])
    return ['read -P 0x%02x %d %d' % tuple(run) for run in runs]


def _check_reads(sock, grant, image, *slabs):
    commands = []
    for slab in slabs:
        commands += _pattern_reads(image, slab * SLAB, (slab + 1) * SLAB)
    test_swapd_nbd.qemu_io(sock, grant, *commands)


def _conf(daemon, grant):
    path = os.path.join(daemon.state_dir, 'exports', '%s.conf' % grant)
    with open(path) as f:
        return f.read()


def _stats(daemon, grant):
    return daemon.client().export_stats(grant)


def _donors_and_source(hosts, grant):
    """Donor 1 lends slabs 0-1, donor 2 slab 2, donor 3 slab 3; host A
    serves the export and writes WRITTEN_ON_A.  Returns (donors, a,
    table, image)."""
    donors = []
    for n in (1, 2, 3):
        donor = hosts('d%d' % n, capacity_mb=16)
        donor.start()
        donors.append(donor)
    table = []
    for donor, indexes in zip(donors, ([0, 1], [2], [3])):
        lent = donor.client().grant_alloc(grant, KEY, SLAB, indexes)
        table += [{'index': s['index'], 'endpoint': lent['endpoint'],
                   'remote_addr': s['remote_addr'], 'rkey': lent['rkey']}
                  for s in lent['slabs']]
    a = hosts('a')
    a.start()
    local_a = a.local_copy('copy.img')
    export = a.client().export_create(grant, KEY, SIZE, SLAB, local_a, table)
    image = bytearray(SIZE)
    commands = []
    for byte, offset, length in WRITTEN_ON_A:
        _apply(image, byte, offset, length)
        commands.append('write -P 0x%02x %d %d' % (byte, offset, length))
    test_swapd_nbd.qemu_io(export['socket'], grant, *(commands + ['flush']))
    return donors, a, export['socket'], image


def test_an_adopted_export_serves_the_donors_pages_and_rebuilds_its_copy(
        hosts):
    grant = str(uuid.uuid4())
    donors, a, sock_a, image = _donors_and_source(hosts, grant)
    d2, d3 = donors[1], donors[2]
    described = a.client().export_describe(grant)

    # Host B adopts the table while donor 2 is unreachable.  Its rebuild
    # waits for export_rebuild: every page is read from the donors and
    # none is rebuilt, across a kill -9, and nothing can be reclaimed.
    _sigstop(d2)
    b = hosts('b')
    b.start()
    local_b = b.local_copy('copy.img')
    with open(local_b, 'wb') as f:
        f.write(b'stale' * 1000)    # a copy left here earlier: dropped
    export = b.client().export_create(grant, KEY, SIZE, SLAB, local_b,
                                      described['slabs'], adopt=True)
    sock_b = export['socket']
    assert export['name'] == 'memagg-swap-%s' % grant
    assert sock_b != sock_a
    assert ' adopt=1 rebuilt=0 rebuild_started=0' in _conf(b, grant)
    _check_reads(sock_b, grant, image, 0, 1, 3)
    assert _stats(b, grant)['rebuild_left'] == SLABS * PAGES_PER_SLAB
    b.kill()
    b.start()
    assert ' adopt=1 rebuilt=0 rebuild_started=0' in _conf(b, grant)
    _check_reads(sock_b, grant, image, 0, 1, 3)
    assert _stats(b, grant)['rebuild_left'] == SLABS * PAGES_PER_SLAB
    with pytest.raises(swapd_client.SwapdError) as info:
        b.client().export_reclaim(grant, [0])
    assert info.value.errno_name == 'EBUSY'

    # export_rebuild: the rebuild copies slabs 0 and 1, then waits at slab
    # 2.  Asked again, it changes nothing.
    left = b.client().export_rebuild(grant)['rebuild_left']
    assert 2 * PAGES_PER_SLAB <= left <= SLABS * PAGES_PER_SLAB
    polling.wait_for(
        lambda: ' adopt=1 rebuilt=2 rebuild_started=1' in _conf(b, grant),
        DEADLINE, message='slabs 0-1 rebuilt and saved')
    assert _stats(b, grant)['rebuild_left'] == 2 * PAGES_PER_SLAB
    assert b.client().export_rebuild(grant) == {
        'rebuild_left': 2 * PAGES_PER_SLAB}
    assert b.client().export_describe(grant)['slabs'] == described['slabs']
    _check_reads(sock_b, grant, image, 0, 1, 3)

    # The guest writes on B before the rebuild reaches slab 3: a whole
    # page, part of a page, a page of zeros; then, donor 3 unreachable,
    # two pages that time out there (slab 3 degrades: B's copy serves the
    # pages written here, donor 3 the others).
    b_writes = [(0x41, 12 * MIB, 4096), (0x42, 13 * MIB + 1024, 512),
                (0x00, 15 * MIB, 4096)]
    for write in b_writes:
        _apply(image, *write)
    test_swapd_nbd.qemu_io(sock_b, grant, *['write -P 0x%02x %d %d' % w
                                            for w in b_writes])
    _sigstop(d3)
    _apply(image, 0x43, 12 * MIB + 8192, 8192)
    test_swapd_nbd.qemu_io(sock_b, grant, 'write -P 0x43 %d 8192'
                           % (12 * MIB + 8192))
    d3.proc.send_signal(signal.SIGCONT)
    assert _stats(b, grant)['degraded_slabs'] == 1
    _check_reads(sock_b, grant, image, 3)

    # kill -9 mid-rebuild: B comes back adopted, the rebuild at slab 2
    # again, running with no export_rebuild.
    b.kill()
    b.start()
    assert b.client().export_list() == [grant]
    conf = _conf(b, grant)
    assert ' local_slabs=3 adopt=1 rebuilt=2 rebuild_started=1' in conf, conf
    polling.wait_for(
        lambda: _stats(b, grant)['rebuild_left'] == 2 * PAGES_PER_SLAB,
        DEADLINE, message='the rebuild waits at slab 2 again')
    _check_reads(sock_b, grant, image, 0, 1, 3)

    # Donor 2 answers again: the rebuild ends, B's export is an ordinary
    # one, and it is the guest's disk.
    d2.proc.send_signal(signal.SIGCONT)
    polling.wait_for(lambda: _stats(b, grant)['rebuild_left'] == 0,
                     DEADLINE, message='the rebuild done')
    assert 'adopt=' not in _conf(b, grant)
    assert b.client().export_rebuild(grant) == {'rebuild_left': 0}
    assert 'cannot read slab 2 from donor %s' % d2.endpoint in b.log()
    whole = os.path.join(b.dir, 'whole.img')
    subprocess.run(['qemu-img', 'convert', '-f', 'raw', '-O', 'raw',
                    'nbd+unix:///memagg-swap-%s?socket=%s' % (grant, sock_b),
                    whole], check=True, capture_output=True, timeout=120)
    with open(whole, 'rb') as f:
        assert f.read() == image
    # The local copy holds exactly that data: every page but the zero ones,
    # plus the page of zeros the guest wrote on B.
    with open(local_b, 'rb') as f:
        assert f.read() == image
    pages = [image[p:p + 4096] for p in range(0, SIZE, 4096)]
    stored = sum(1 for page in pages if page.count(0) != 4096) + 1
    assert _stats(b, grant)['stored_pages'] == stored
    assert b.client().export_describe(grant)['local_slabs'] == [3]

    # Dropping B's export (a failed migration's clean-up) deletes its copy
    # and frees nothing on the donors: A still reads its disk from them.
    used = [d.client().donor_stats()['used'] for d in donors]
    b.client().export_drop(grant, delete=True)
    assert not os.path.exists(local_b)
    assert [d.client().donor_stats()['used'] for d in donors] == used
    assert used == [2 * SLAB, SLAB, SLAB]
    a_image = bytearray(SIZE)
    for write in WRITTEN_ON_A:
        _apply(a_image, *write)
    _check_reads(sock_a, grant, a_image, 0, 1, 2)
    with pytest.raises(swapd_client.SwapdError) as info:
        b.client().export_rebuild(grant)
    assert info.value.errno_name == 'ENOENT'


def test_adopting_a_table_with_a_local_slab_is_refused(hosts):
    grant = str(uuid.uuid4())
    donor = hosts('d1', capacity_mb=16)
    donor.start()
    lent = donor.client().grant_alloc(grant, KEY, SLAB, list(range(SLABS)))
    table = [{'index': s['index'], 'endpoint': lent['endpoint'],
              'remote_addr': s['remote_addr'], 'rkey': lent['rkey']}
             for s in lent['slabs']]
    b = hosts('b')
    b.start()
    client = b.client()
    local = b.local_copy('copy.img')

    with pytest.raises(swapd_client.SwapdError) as info:
        client.export_create(grant, KEY, SIZE, SLAB, local,
                             [s for s in table if s['index'] != 1],
                             adopt=True)
    assert info.value.errno_name == 'EINVAL'
    assert info.value.message == ('slabs: an adopted export reads every slab '
                                  'from its donor; slab 1 has none')
    with pytest.raises(swapd_client.SwapdError) as info:
        client.request('EXPORT_CREATE', grant=grant, key=KEY, size=SIZE,
                       slab_size=SLAB, local=local,
                       slabs=swapd_client.slab_specs(table, SLAB),
                       local_slabs=2, adopt=1)
    assert info.value.errno_name == 'EINVAL'
    assert info.value.message.startswith(
        'local_slabs: an adopted export reads every slab from its donor; '
        'slab 2 is served from the local copy')
    for bad, field in (({'adopt': 'yes'}, 'adopt:'),
                       ({'adopt': 1, 'rebuilt': 1}, 'rebuilt:')):
        with pytest.raises(swapd_client.SwapdError) as info:
            client.request('EXPORT_CREATE', grant=grant, key=KEY, size=SIZE,
                           slab_size=SLAB, local=local,
                           slabs=swapd_client.slab_specs(table, SLAB), **bad)
        assert info.value.errno_name == 'EINVAL'
        assert info.value.message.startswith(field)
    assert client.export_list() == []
    assert not os.path.exists(local)


def test_a_local_copy_outside_state_dir_local_is_refused(hosts):
    """local= must be a file of its own below the consumer's
    state_dir/local: a file elsewhere, reached by its path, '..' or a
    symlink there, is refused and left as it was, not emptied by
    adopt=1."""
    b = hosts('b')
    b.start()
    client = b.client()
    grant = str(uuid.uuid4())
    table = [{'index': i, 'endpoint': 'tcp://127.0.0.1:1',
              'remote_addr': i * SLAB, 'rkey': 1} for i in range(SLABS)]
    outside = os.path.join(b.dir, 'outside.img')
    with open(outside, 'wb') as f:
        f.write(b'not a local copy')
    os.symlink(outside, b.local_copy('link.img'))
    for local in (outside, b.local_copy('../../outside.img'),
                  b.local_copy('link.img')):
        with pytest.raises(swapd_client.SwapdError) as info:
            client.export_create(grant, KEY, SIZE, SLAB, local, table,
                                 adopt=True)
        assert info.value.errno_name == 'EINVAL'
        assert info.value.message.startswith('local: '), info.value.message
    with open(outside, 'rb') as f:
        assert f.read() == b'not a local copy'
    assert client.export_list() == []

    export = client.export_create(grant, KEY, SIZE, SLAB,
                                  b.local_copy('copy.img'), table,
                                  adopt=True)
    assert export['name'] == 'memagg-swap-%s' % grant
    client.export_drop(grant, delete=True)
    assert not os.path.exists(b.local_copy('copy.img'))
