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

"""The swapd TCP frame protocol (native/swapd/frame.h, frame_auth.h) in
Python, for the functional tests that speak it by hand: the HELLO, the
per-grant per-connection keys (HKDF-SHA256), and frames signed and checked
with HMAC-SHA256/128, the MAC every swapd can make (a Python peer offers
only it, so the donor chooses it).
"""
import hashlib
import hmac
import os
import socket
import struct

HEADER = struct.Struct('<IBBHQ16sQIIQiI16s16s')
HELLO = struct.Struct('<IBBHB23s32s32s')
HDR = HEADER.size               # 96
MAGIC = 0x5057534d
VERSION = 2
READ, WRITE, ERROR, OP_HELLO = 1, 2, 3, 4
REPLY, SEALED = 0x0001, 0x0002
MAC_HMAC, MAC_AEGIS = 0x01, 0x02
LABEL = b'memagg-swapd frame v2'
C2D, D2C = 0, 1
PART_HEADER, PART_PAGES, PART_SEALS = 1, 2, 3
SEAL_LEN = 32
PAGE = 4096
TAG_LEN = 16
HTAG_OFF = 80


def hkdf(ikm, salt, info, length=32):
    prk = hmac.new(salt, ikm, hashlib.sha256).digest()
    okm, block, i = b'', b'', 1
    while len(okm) < length:
        block = hmac.new(prk, block + info + bytes([i]),
                         hashlib.sha256).digest()
        okm += block
        i += 1
    return okm[:length]


def mac(k, seq, part, data):
    nonce = struct.pack('<QB', seq, part) + bytes(23)
    return hmac.new(k, nonce + data, hashlib.sha256).digest()[:TAG_LEN]


def payload_len(op, flags, length, status):
    """Bytes of payload after a header with these fields."""
    seals = length // PAGE * SEAL_LEN if flags & SEALED else 0
    if (op == WRITE and not flags & REPLY) or (
            op == READ and flags & REPLY and status == 0):
        return length + seals
    return 0


def parse(hdr):
    """A header's fields as a dict."""
    (magic, version, op, flags, request, grant, seq, slab, length, offset,
     status, _, ptag, htag) = HEADER.unpack(hdr)
    assert magic == MAGIC and version == VERSION, (magic, version)
    return dict(op=op, flags=flags, request=request, grant=grant, seq=seq,
                slab=slab, length=length, offset=offset, status=status,
                ptag=ptag, htag=htag,
                payload=payload_len(op, flags, length, status))


def recv_exactly(sock, n):
    data = bytearray()
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise EOFError('closed after %d of %d bytes' % (len(data), n))
        data += chunk
    return bytes(data)


class Session:
    """A consumer's connection to a donor, past its HELLO."""

    def __init__(self, sock):
        self.sock = sock
        self.nonce_c = os.urandom(32)
        sock.sendall(HELLO.pack(MAGIC, VERSION, OP_HELLO, 0, MAC_HMAC,
                                bytes(23), self.nonce_c, bytes(32)))
        (magic, version, op, flags, chosen, _, self.nonce_d,
         _) = HELLO.unpack(recv_exactly(sock, HDR))
        assert (magic, version, op, flags, chosen) == (
            MAGIC, VERSION, OP_HELLO, REPLY, MAC_HMAC)
        self.tx_seq = self.rx_seq = 0

    def key(self, grant, key, direction):
        return hkdf(key, self.nonce_c + self.nonce_d,
                    LABEL + grant + bytes([direction]))

    def request(self, op, grant, key, slab=0, offset=0, length=0,
                payload=b'', request=0):
        """A signed request's bytes (header and payload)."""
        self.tx_seq += 1
        k = self.key(grant, key, C2D)
        ptag = mac(k, self.tx_seq, PART_PAGES, payload) if payload \
            else bytes(TAG_LEN)
        hdr = HEADER.pack(MAGIC, VERSION, op, 0, request, grant, self.tx_seq,
                          slab, length, offset, 0, 0, ptag, bytes(TAG_LEN))
        return (hdr[:HTAG_OFF] + mac(k, self.tx_seq, PART_HEADER,
                                     hdr[:HTAG_OFF]) + payload)

    def reply(self, grant=None, key=None, payload=0):
        """The next reply: (status, payload, signed), checking its sequence
        number, and its tags when grant and key are given."""
        hdr = recv_exactly(self.sock, HDR)
        f = parse(hdr)
        assert f['flags'] & REPLY, f
        data = recv_exactly(self.sock, f['payload']) if f['payload'] \
            else b''
        self.rx_seq += 1
        assert f['seq'] == self.rx_seq, (f['seq'], self.rx_seq)
        signed = False
        if key is not None and f['htag'] != bytes(TAG_LEN):
            k = self.key(grant, key, D2C)
            assert hmac.compare_digest(
                mac(k, f['seq'], PART_HEADER, hdr[:HTAG_OFF]), f['htag'])
            if data:
                assert hmac.compare_digest(
                    mac(k, f['seq'], PART_PAGES, data), f['ptag'])
            signed = True
        return f['status'], data, signed


def connect(port, source='127.0.0.1', timeout=10, hello=True):
    """A connection to the donor on port from source (and its Session, or
    the bare socket when not hello)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    sock.bind((source, 0))
    sock.connect(('127.0.0.1', port))
    return Session(sock) if hello else sock
