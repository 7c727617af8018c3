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
from stdin: ``arm N``, ``replay N``, ``alter N`` (each ``ok``), ``dump
PATH`` (writes every byte relayed either way to PATH; ``ok``) and
``state`` (JSON: writes as [flags, base64 of the data], tampered,
replayed, altered, errors).

It relays frames as they are: it has no key, so it cannot sign what it
changes (swapd_frames.py, frame_auth.h).
"""
import base64
import json
import socket
import sys
import threading

from memagg.tests.functional import swapd_frames

HDR = swapd_frames.HDR
OP_READ, OP_WRITE = swapd_frames.READ, swapd_frames.WRITE


class Relay:
    """Relay TCP connections from consumers to one donor, frame by frame.

    ``writes`` holds (flags, data) of every WRITE request relayed;
    ``arm()`` makes the next READ reply that carries pages arrive with one
    byte of its first page flipped; ``tampered`` counts those;
    ``replay()`` makes the next request reach the donor twice, and
    ``alter()`` the next WRITE request with one byte of its page flipped
    (``replayed``, ``altered`` count them); ``captured`` is every byte
    relayed, both ways; ``errors`` says why a connection could not be
    relayed."""

    def __init__(self, donor_port):
        self.donor_port = donor_port
        self.listener = socket.socket()
        self.listener.bind(('127.0.0.1', 0))
        self.listener.listen(8)
        self.port = self.listener.getsockname()[1]
        self.endpoint = 'tcp://127.0.0.1:%d' % self.port
        self.writes = []
        self.errors = []
        self.tampered = self.replayed = self.altered = 0
        self.captured = bytearray()
        self._armed = self._replay = self._alter = 0
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def arm(self, times=1):
        with self._lock:
            self._armed += times

    def replay(self, times=1):
        with self._lock:
            self._replay += times

    def alter(self, times=1):
        with self._lock:
            self._alter += times

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

    def _relay(self, src, dst, from_donor):
        try:
            # The HELLO each way has no payload, and is not a frame.
            hello = self._read(src, HDR)
            with self._lock:
                self.captured += hello
            dst.sendall(hello)
            while True:
                hdr = self._read(src, HDR)
                f = swapd_frames.parse(hdr)
                n, length = f['payload'], f['length']
                payload = bytearray(self._read(src, n)) if n else b''
                with self._lock:
                    self.captured += hdr + payload
                copies = 1
                if not from_donor and f['op'] == OP_WRITE:
                    with self._lock:
                        self.writes.append((f['flags'],
                                            bytes(payload[:length])))
                        if self._alter and length:
                            self._alter -= 1
                            self.altered += 1
                            payload[100] ^= 0x01
                if not from_donor:
                    with self._lock:
                        if self._replay:
                            self._replay -= 1
                            self.replayed += 1
                            copies = 2
                if from_donor and f['op'] == OP_READ and length and n:
                    with self._lock:
                        if self._armed:
                            self._armed -= 1
                            self.tampered += 1
                            payload[100] ^= 0x01
                dst.sendall((hdr + bytes(payload)) * copies)
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
        if words[:1] in (['arm'], ['replay'], ['alter']):
            getattr(proxy, words[0])(int(words[1]))
            print('ok', flush=True)
        elif words[:1] == ['dump']:
            with proxy._lock, open(words[1], 'wb') as f:
                f.write(proxy.captured)
            print('ok', flush=True)
        elif words[:1] == ['state']:
            with proxy._lock:
                state = {'writes': [[flags, base64.b64encode(data).decode()]
                                    for flags, data in proxy.writes],
                         'tampered': proxy.tampered,
                         'replayed': proxy.replayed,
                         'altered': proxy.altered,
                         'errors': list(proxy.errors)}
            print(json.dumps(state), flush=True)
    proxy.close()


if __name__ == '__main__':
    main(sys.argv)
