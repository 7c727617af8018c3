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

"""Sealed exports between real memagg-swapd processes (issue 18, point 2):
the pages a consumer sends its donor are ciphertext, a page altered on the
way back is never returned (read from the local copy, or an I/O error
where there is none), and the page key follows a live migration sealed
for the destination.

The donor's TCP endpoint is reached through TamperProxy, a relay of the
swapd frame protocol (native/swapd/frame.h) in a process of its own
(tamper_proxy.py) that records what goes to the donor and, when armed,
flips a byte of a page in the donor's next READ reply.  Since frames are
authenticated (frame_auth.h) that reply fails its MAC before its page is
opened: counted in frame_auth_failures.  Over the rdma transport
(libfabric's tcp provider), which has no frames to relay, the donor
process's memory is read and altered through /proc/PID/mem instead.
QEMU's qemu-io does the I/O.
"""
import base64
import json
import os
import stat
import subprocess
import sys
import uuid

import pytest

from memagg.compute import swapd as swapd_client
from memagg.tests.functional import test_swapd_nbd
from memagg.tests.functional.test_swapd_adopt import hosts_fixture  # noqa
from memagg.tests import polling

pytestmark = [pytest.mark.functional]

MIB = 1 << 20
SLAB = 4 * MIB
SIZE = 2 * SLAB
KEY = 'e7' * 32

FLAG_SEALED = 2     # frame.h's SD_FRAME_SEALED


class TamperProxy:
    """tamper_proxy.Relay for one donor, in a process of its own, with the
    same ``writes``, ``tampered``, ``errors`` and ``arm()``."""

    def __init__(self, donor_port):
        self._proc = subprocess.Popen(
            [sys.executable, '-m', 'memagg.tests.functional.tamper_proxy',
             str(donor_port)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            text=True)
        self.port = int(self._proc.stdout.readline())
        self.endpoint = 'tcp://127.0.0.1:%d' % self.port

    def _ask(self, command):
        self._proc.stdin.write(command + '\n')
        self._proc.stdin.flush()
        return self._proc.stdout.readline()

    def arm(self, times=1):
        assert self._ask('arm %d' % times).strip() == 'ok'

    def replay(self, times=1):
        assert self._ask('replay %d' % times).strip() == 'ok'

    def alter(self, times=1):
        assert self._ask('alter %d' % times).strip() == 'ok'

    def captured(self, path):
        """Every byte relayed so far, both ways (through the file path)."""
        assert self._ask('dump %s' % path).strip() == 'ok'
        with open(path, 'rb') as f:
            return f.read()

    def state(self):
        return self._state()

    def _state(self):
        return json.loads(self._ask('state'))

    @property
    def writes(self):
        return [(flags, base64.b64decode(data))
                for flags, data in self._state()['writes']]

    @property
    def tampered(self):
        return self._state()['tampered']

    @property
    def errors(self):
        return self._state()['errors']

    def close(self):
        self._proc.stdin.close()
        self._proc.wait(30)


def _qemu_io_fails(sock, grant, command):
    """Run one qemu-io command that must fail; its output."""
    uri = 'nbd+unix:///memagg-swap-%s?socket=%s' % (grant, sock)
    proc = subprocess.run(['qemu-io', '-f', 'raw', uri, '-c', command],
                          capture_output=True, text=True, timeout=120)
    out = proc.stdout + proc.stderr
    assert 'failed' in out.lower() or proc.returncode != 0, out
    return out


@pytest.fixture(name='proxied')
def proxied_fixture(hosts):
    """A donor lending two slabs of a new grant through a TamperProxy:
    (grant, proxy, slab table)."""
    donor = hosts('donor', capacity_mb=16)
    donor.start()
    proxy = TamperProxy(donor.port)
    grant = str(uuid.uuid4())
    lent = donor.client().grant_alloc(grant, KEY, SLAB, [0, 1])
    table = [{'index': s['index'], 'endpoint': proxy.endpoint,
              'remote_addr': s['remote_addr'], 'rkey': lent['rkey']}
             for s in lent['slabs']]
    yield grant, proxy, table
    proxy.close()


def _conf_path(daemon, grant):
    return os.path.join(daemon.state_dir, 'exports', '%s.conf' % grant)


def _source(hosts, grant, proxy, table):
    """Host A's sealed export with 0x5a in its first 64 KiB and 0x6b at
    slab 1, both on the donor: (daemon, socket)."""
    a = hosts('a')
    a.start()
    export = a.client().export_create(grant, KEY, SIZE, SLAB,
                                      a.local_copy('copy.img'),
                                      table, seal=True)
    test_swapd_nbd.qemu_io(export['socket'], grant,
                           'write -P 0x5a 0 65536',
                           'write -P 0x6b %d 8192' % SLAB, 'flush')
    # A write that failed on its way to the donor still succeeds (the slab
    # is then served from the local copy): the tests below need the donor
    # to hold the pages, so say why it does not.
    stats = a.client().export_stats(grant)
    assert stats['degraded_slabs'] == 0 and proxy.writes, (
        'proxy errors %s; export stats %s; log:\n%s'
        % (proxy.errors, stats, a.log()[-4000:]))
    return a, export['socket']


def test_pages_reach_the_donor_sealed_and_an_altered_one_is_read_locally(
        hosts, proxied):
    grant, proxy, table = proxied
    a, sock = _source(hosts, grant, proxy, table)

    # On the wire (and so on the donor): ciphertext and seals only.
    for flags, data in proxy.writes:
        assert flags & FLAG_SEALED
        assert b'\x5a' * 64 not in data and b'\x6b' * 64 not in data
    # The page key is in the export's state, which only swapd reads, and
    # nowhere else.
    path = _conf_path(a, grant)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
    with open(path) as f:
        conf = f.read()
    assert ' page_key=' in conf
    page_key = conf.split(' page_key=')[1].split()[0]
    described = a.client().export_describe(grant)
    assert described['seal'] == '1'
    assert page_key not in repr(described)
    assert page_key not in a.log()
    # A sealed export takes whole pages only and tells QEMU, which then
    # reads, modifies and writes the page around a smaller write itself.
    test_swapd_nbd.qemu_io(sock, grant, 'write -P 0x11 512 512',
                           'read -P 0x5a 0 512', 'read -P 0x11 512 512',
                           'read -P 0x5a 1024 3072')
    test_swapd_nbd.qemu_io(sock, grant, 'write -P 0x5a 512 512')

    # A page altered on its way back: its frame fails its MAC before the
    # page is opened; the guest gets the right data, from the local copy,
    # and it is counted and logged.
    proxy.arm()
    test_swapd_nbd.qemu_io(sock, grant, 'read -P 0x5a 0 65536')
    assert proxy.tampered == 1
    stats = a.client().export_stats(grant)
    assert stats['frame_auth_failures'] == 1
    assert stats['auth_failures'] == 0
    assert stats['local_reads'] >= 1
    assert 'authentic' in a.log().lower()
    # Untouched, the donor's pages open (or, the connection being made
    # again, come from the local copy): the right data either way.
    test_swapd_nbd.qemu_io(sock, grant, 'read -P 0x6b %d 8192' % SLAB)
    assert a.client().export_stats(grant)['frame_auth_failures'] == 1


def test_the_page_key_follows_a_migration_sealed_for_the_destination(
        hosts, proxied):
    grant, proxy, table = proxied
    a, _ = _source(hosts, grant, proxy, table)
    b = hosts('b')
    b.start()
    described = a.client().export_describe(grant)
    export = b.client().export_create(
        grant, KEY, SIZE, SLAB, b.local_copy('copy.img'),
        described['slabs'], adopt=True, seal=True)
    offer = export['key_offer']
    assert len(offer) == 64
    assert b.client().export_stats(grant)['key_pending'] == 1
    # Without its key, B serves nothing from the donor.
    _qemu_io_fails(export['socket'], grant, 'read -P 0x5a 0 4096')

    # A key sealed for another offer does not open; nor does an altered
    # one.
    other = str(uuid.uuid4())
    wrapped = a.client().export_key_wrap(grant, offer)
    assert len(wrapped) == 186
    assert a.client().export_key_wrap(grant, 'ab' * 32) != wrapped
    altered = wrapped[:-2] + ('00' if wrapped[-2:] != '00' else '01')
    for bad in (a.client().export_key_wrap(grant, 'ab' * 32), altered):
        with pytest.raises(swapd_client.SwapdError) as info:
            b.client().export_key_install(grant, bad)
        assert info.value.errno_name == 'EBADMSG'
    with pytest.raises(swapd_client.SwapdError) as info:
        b.client().export_key_install(other, wrapped)
    assert info.value.errno_name == 'ENOENT'

    b.client().export_key_install(grant, wrapped)
    assert b.client().export_stats(grant)['key_pending'] == 0
    with pytest.raises(swapd_client.SwapdError) as info:
        b.client().export_key_install(grant, wrapped)
    assert info.value.errno_name == 'EALREADY'
    # The key is B's now, saved before the install answered, so kept
    # across a kill -9: B reads A's pages from the donor. (The reads once
    # failed with EIO here late in a full run: the relay, then threads of
    # the test process, closed a socket whose other direction's thread
    # still read from its descriptor, reused by then by B's new
    # connection. tamper_proxy.py shuts a socket down before closing it,
    # in a process of its own.)
    with open(_conf_path(b, grant)) as f:
        assert ' page_key=' in f.read()
    b.kill()
    b.start()
    polling.wait_for(lambda: grant in b.client().export_list(), 60,
                     message='B serving the export again')
    test_swapd_nbd.qemu_io(export['socket'], grant, 'read -P 0x5a 0 65536',
                           'read -P 0x6b %d 8192' % SLAB)

    # B has no local copy of these pages yet: an altered one is an I/O
    # error, never wrong data.
    proxy.arm()
    _qemu_io_fails(export['socket'], grant, 'read -P 0x5a 0 4096')
    assert proxy.tampered == 1
    assert b.client().export_stats(grant)['frame_auth_failures'] == 1


def _donor_memory(donor, address, length):
    """``length`` bytes of the donor memagg-swapd's memory at ``address``
    (its slabs' addresses are its own): what a donor host holds."""
    with open('/proc/%d/mem' % donor.proc.pid, 'rb') as mem:
        mem.seek(address)
        return mem.read(length)


def _alter_donor_memory(donor, address):
    """Flip the byte at ``address`` of the donor memagg-swapd's memory, as
    a donor host (or anything writing its RAM) could."""
    with open('/proc/%d/mem' % donor.proc.pid, 'r+b') as mem:
        mem.seek(address)
        byte = mem.read(1)
        mem.seek(address)
        mem.write(bytes([byte[0] ^ 0xff]))


def test_a_fabric_donor_holds_ciphertext_and_an_altered_page_is_read_locally(
        hosts):
    # The rdma transport on libfabric's tcp provider (issue 37): the
    # consumer writes and reads the donor's registered memory with
    # one-sided operations, so there is no frame to relay; the donor's
    # memory itself is read and altered here.
    donor = hosts('donor', capacity_mb=16, fabric_provider='tcp')
    donor.start()
    grant = str(uuid.uuid4())
    lent = donor.client().grant_alloc(grant, KEY, SLAB, [0, 1])
    assert lent['endpoint'].startswith('rdma://')
    table = [{'index': s['index'], 'endpoint': lent['endpoint'],
              'remote_addr': s['remote_addr'], 'rkey': lent['rkey']}
             for s in lent['slabs']]
    a = hosts('a', fabric_provider='tcp')
    a.start()
    export = a.client().export_create(grant, KEY, SIZE, SLAB,
                                      a.local_copy('copy.img'), table,
                                      seal=True)
    sock = export['socket']
    test_swapd_nbd.qemu_io(sock, grant, 'write -P 0x5a 0 65536',
                           'write -P 0x6b %d 8192' % SLAB, 'flush')
    stats = a.client().export_stats(grant)
    assert stats['degraded_slabs'] == 0 and stats['remote_errors'] == 0, (
        stats, a.log()[-4000:])

    # The donor's memory holds the pages, sealed: ciphertext only.
    first = table[0]['remote_addr']
    held = _donor_memory(donor, first, 65536)
    assert held != bytes(65536), 'the pages never reached the donor'
    assert b'\x5a' * 64 not in held
    assert b'\x6b' * 64 not in _donor_memory(
        donor, table[1]['remote_addr'], 8192)

    # A page altered in the donor's memory does not open: the guest gets
    # the right data, from the local copy, and it is counted.
    _alter_donor_memory(donor, first + 100)
    test_swapd_nbd.qemu_io(sock, grant, 'read -P 0x5a 0 65536')
    stats = a.client().export_stats(grant)
    assert stats['auth_failures'] == 1, stats
    assert stats['local_reads'] >= 1, stats
    assert stats['remote_errors'] == 0, stats
    # The untouched slab still comes from the donor.
    reads = stats['reads']
    test_swapd_nbd.qemu_io(sock, grant, 'read -P 0x6b %d 8192' % SLAB)
    stats = a.client().export_stats(grant)
    assert stats['reads'] > reads and stats['auth_failures'] == 1, stats
