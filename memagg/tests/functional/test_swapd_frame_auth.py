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

"""No secret on the wire, every frame authenticated (issue 34, item 2),
between real memagg-swapd processes: a consumer's export whose slabs live
on a donor reached through TamperProxy (tamper_proxy.py), a relay that
records every byte both ways and can replay or alter a frame.  QEMU's
qemu-io and qemu-img do the I/O.

The whole conversation holds no byte run of the grant key; a replayed
request and an altered one are refused and counted by the donor; a reply
altered on its way back is refused and counted by the consumer; and the
data read back is what was written (its checksum).
"""
import hashlib
import subprocess
import time
import uuid

import pytest

from memagg.tests.functional import test_swapd_nbd
from memagg.tests.functional.test_page_encryption import TamperProxy
from memagg.tests.functional.test_swapd_adopt import hosts_fixture  # noqa

pytestmark = [pytest.mark.functional]

MIB = 1 << 20
SLAB = 4 * MIB
SIZE = 3 * SLAB                 # a slab for each kind of tampering
KEY = bytes(range(0x40, 0x60))      # the grant key, 32 bytes


def _key_runs(data):
    """The offsets in data of the key or of any 8-byte run of it."""
    found = [data.find(KEY)] + [data.find(KEY[i:i + 8])
                                for i in range(len(KEY) - 7)]
    return [at for at in found if at >= 0]


def _image(sock, grant, path):
    """The export's whole content, read through NBD by qemu-img."""
    uri = 'nbd+unix:///memagg-swap-%s?socket=%s' % (grant, sock)
    subprocess.run(['qemu-img', 'convert', '-f', 'raw', '-O', 'raw', uri,
                    path], check=True, capture_output=True, timeout=120)
    with open(path, 'rb') as f:
        return f.read()


def _refused_auth(donor):
    return int(donor.client().donor_stats()['frames_refused_auth'])


def test_no_key_on_the_wire_and_tampered_frames_are_refused(
        hosts, tmp_path):
    donor = hosts('donor', capacity_mb=16)
    donor.start()
    proxy = TamperProxy(donor.port)
    try:
        grant = str(uuid.uuid4())
        lent = donor.client().grant_alloc(grant, KEY.hex(), SLAB,
                                          [0, 1, 2])
        table = [{'index': s['index'], 'endpoint': proxy.endpoint,
                  'remote_addr': s['remote_addr'], 'rkey': lent['rkey']}
                 for s in lent['slabs']]
        a = hosts('a')
        a.start()
        export = a.client().export_create(grant, KEY.hex(), SIZE, SLAB,
                                          a.local_copy('copy.img'), table)
        sock = export['socket']
        expected = bytearray(SIZE)

        def write(pattern, offset, length):
            test_swapd_nbd.qemu_io(sock, grant, 'write -P 0x%x %d %d'
                                   % (pattern, offset, length), 'flush')
            expected[offset:offset + length] = bytes([pattern]) * length

        write(0x5a, 0, 65536)
        write(0x6b, SLAB, 8192)
        write(0x3c, 2 * SLAB, 8192)
        test_swapd_nbd.qemu_io(sock, grant, 'read -P 0x5a 0 65536',
                               'read -P 0x6b %d 8192' % SLAB)
        stats = a.client().export_stats(grant)
        assert stats['degraded_slabs'] == 0 and proxy.writes, (
            proxy.errors, stats, a.log()[-3000:])
        assert _refused_auth(donor) == 0

        # A request replayed: the donor serves the first copy, refuses the
        # second (its sequence number is spent) and closes the connection.
        proxy.replay()
        write(0x77, 4096, 4096)
        assert proxy.state()['replayed'] == 1
        assert _refused_auth(donor) == 1

        # A WRITE altered on its way (one byte of its page): refused before
        # it is stored, counted.  Slab 1, which has not failed over (the
        # consumer connects again after a second).
        time.sleep(1.2)
        proxy.alter()
        write(0x88, SLAB + 16384, 4096)
        assert proxy.state()['altered'] == 1
        assert _refused_auth(donor) == 2

        # A READ reply altered on its way back (slab 2): the consumer
        # refuses and counts it; the guest's data comes from the local
        # copy.
        time.sleep(1.2)
        assert a.client().export_stats(grant)['frame_auth_failures'] == 0
        proxy.arm()
        test_swapd_nbd.qemu_io(sock, grant, 'read -P 0x3c %d 8192'
                               % (2 * SLAB))
        assert proxy.state()['tampered'] == 1
        stats = a.client().export_stats(grant)
        assert stats['frame_auth_failures'] == 1, a.log()[-3000:]
        assert 'failed authentication' in a.log()

        # The data read back is what was written.
        image = _image(sock, grant, str(tmp_path / 'back.raw'))
        assert (hashlib.sha256(image).hexdigest() ==
                hashlib.sha256(expected).hexdigest())

        # The whole conversation, both ways: no run of the key, though the
        # pages themselves (clear: this export is not sealed) are there.
        wire = proxy.captured(str(tmp_path / 'wire.bin'))
        assert b'\x5a' * 4096 in wire and len(wire) > 65536
        assert _key_runs(wire) == [] and KEY.hex().encode() not in wire
    finally:
        proxy.close()
