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

"""A relay of the swapd frame protocol (native/swapd/frame.h) from
consumers to one donor, run as its own process by test_page_encryption:
in the test's process its threads once went unscheduled for the 5 s a
donor io may take, and the consumer's slabs degraded (CI, twice).

    python -m memagg.tests.functional.tamper_proxy DONOR_PORT

prints the port it listens on, then answers one line per command read
from stdin: ``arm N`` (``ok``) and ``state`` (JSON: writes as
[flags, base64 of the data], tampered, errors).
"""
import base64
import json
import socket
import struct
import sys
import threading

HDR = 88
OP_READ, OP_WRITE = 1, 2
FLAG_REPLY, FLAG_SEALED = 1, 2
SEAL_LEN = 32


class Relay:
    """Relay TCP connections from consumers to one donor, frame by frame.

    ``writes`` holds (flags, data) of every WRITE request relayed;
    ``arm()`` makes the next READ reply that carries pages arrive with one
    byte of its first page flipped; ``tampered`` counts those; ``errors``
    says why a connection could not be relayed."""

    def __init__(self, donor_port):
        self.donor_port = donor_port
        self.listener = socket.socket()
        self.listener.bind(('127.0.0.1', 0))
        self.listener.listen(8)
        self.port = self.listener.getsockname()[1]
        self.endpoint = 'tcp://127.0.0.1:%d' % self.port
        self.writes = []
        self.errors = []
        self.tampered = 0
        self._armed = 0
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def arm(self, times=1):
        with self._lock:
            self._armed += times

    def close(self):
        self.listener.close()

    def _accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return              # closed
            try:
                donor = socket.create_connection(
                    ('127.0.0.1', self.donor_port), timeout=30)
                donor.settimeout(None)
            except OSError as exc:
                # The consumer sees its connection close and degrades;
                # the test reports this instead of a bare empty list.
                self.errors.append('connect to the donor: %s' % exc)
                client.close()
                continue
            threading.Thread(target=self._relay, args=(client, donor, False),
                             daemon=True).start()
            threading.Thread(target=self._relay, args=(donor, client, True),
                             daemon=True).start()

    @staticmethod
    def _read(sock, n):
        buf = b''
        while len(buf) < n:
            chunk = sock.recv(n - len(buf))
            if not chunk:
                raise EOFError
            buf += chunk
        return buf

    @staticmethod
    def _payload_len(hdr):
        op = hdr[5]
        flags, length, status = (struct.unpack_from('<H', hdr, 6)[0],
                                 struct.unpack_from('<I', hdr, 68)[0],
                                 struct.unpack_from('<i', hdr, 80)[0])
        seals = length // 4096 * SEAL_LEN if flags & FLAG_SEALED else 0
        reply = flags & FLAG_REPLY
        if (op == OP_WRITE and not reply) or (
                op == OP_READ and reply and status == 0):
            return flags, length, length + seals
        return flags, length, 0

    def _relay(self, src, dst, from_donor):
        try:
            while True:
                hdr = self._read(src, HDR)
                flags, length, n = self._payload_len(hdr)
                payload = bytearray(self._read(src, n)) if n else b''
                if not from_donor and hdr[5] == OP_WRITE:
                    with self._lock:
                        self.writes.append((flags, bytes(payload[:length])))
                if from_donor and hdr[5] == OP_READ and length:
                    with self._lock:
                        if self._armed:
                            self._armed -= 1
                            self.tampered += 1
                            payload[100] ^= 0x01
                dst.sendall(hdr + bytes(payload))
        except (EOFError, OSError):
            pass
        finally:
            # shutdown first: it wakes the other direction's thread from
            # its recv, which a close alone would not, and that thread
            # would then read from whatever socket reuses the descriptor.
            for sock in (src, dst):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                sock.close()


def main(argv):
    proxy = Relay(int(argv[1]))
    print(proxy.port, flush=True)
    for line in sys.stdin:
        words = line.split()
        if words[:1] == ['arm']:
            proxy.arm(int(words[1]))
            print('ok', flush=True)
        elif words[:1] == ['state']:
            with proxy._lock:
                state = {'writes': [[flags, base64.b64encode(data).decode()]
                                    for flags, data in proxy.writes],
                         'tampered': proxy.tampered,
                         'errors': list(proxy.errors)}
            print(json.dumps(state), flush=True)
    proxy.close()


if __name__ == '__main__':
    main(sys.argv)
