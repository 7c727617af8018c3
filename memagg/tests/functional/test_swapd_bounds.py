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

"""memagg-swapd's donor port under a flood from unauthenticated peers, all
at once: 1,000 idle connections, 100 headers of 32 MiB WRITEs with unknown
grants, 10,000 frames of random grants. Its threads stay under
[swapd] max_connections plus a few, its memory grows by less than 16 MiB,
its log by less than 100 lines, and a consumer with a real grant (made over
the control socket) reads and writes throughout. A real memagg-swapd,
started as an operator starts it, at its default caps and deadlines.

The flood comes from 127.0.0.2-127.0.0.8 (the caps count by source
address), the consumer from 127.0.0.1."""
import os
import resource
import shutil
import subprocess
import tempfile
import uuid

import pytest

from memagg import _swapd
from memagg.cmd import swapd as swapd_cmd
from memagg.tests.functional import service_procs
from memagg.tests.functional import swapd_flood
from memagg.tests.functional import swapd_frames
from memagg.tests.functional import test_swapd_nbd
from memagg.tests import polling

pytestmark = [pytest.mark.functional]

MIB = 1 << 20
SLAB = 4 * MIB
MAX_CONNECTIONS = 256           # [swapd] max_connections's default

READ, WRITE = swapd_frames.READ, swapd_frames.WRITE
connect = swapd_frames.connect


class Consumer:
    """A consumer with a real grant: writes a page and reads it back, its
    frames signed, the donor's replies checked."""

    def __init__(self, port, grant, key):
        self.port = port
        self.grant = grant
        self.key = key
        self.session = connect(port)
        self.done = 0

    def round_trip(self, session=None):
        s = session or self.session
        page = bytes([self.done % 251]) * 4096
        offset = (self.done % 16) * 4096
        s.sock.sendall(s.request(WRITE, self.grant, self.key, 1, offset,
                                 4096, page, 2 * self.done))
        assert s.reply(self.grant, self.key) == (0, b'', True)
        s.sock.sendall(s.request(READ, self.grant, self.key, 1, offset,
                                 4096, request=2 * self.done + 1))
        assert s.reply(self.grant, self.key) == (0, page, True)
        self.done += 1

    def fresh_round_trip(self):
        """A round trip on a connection of its own."""
        session = connect(self.port)
        try:
            self.round_trip(session)
        finally:
            session.sock.close()


def test_a_flood_of_unauthenticated_peers_is_bounded(tmp_path):
    if not swapd_flood.raise_descriptor_limit():
        pytest.skip('needs %d descriptors, the hard limit is %d' % (
            swapd_flood.DESCRIPTORS,
            resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    # unix socket paths are limited to 107 bytes: a short directory.
    sock_dir = tempfile.mkdtemp(prefix='sdb', dir='/tmp')
    port = service_procs.free_port()
    control = os.path.join(sock_dir, 'donor.ctl')
    log_path = str(tmp_path / 'donor.log')
    config = str(tmp_path / 'memagg.conf')
    # Info level, as deployed: the log counted is the operator's.
    swapd_cmd.write_config(config, {
        'control_socket': control, 'export_dir': os.path.join(sock_dir, 'x'),
        'state_dir': str(tmp_path), 'listen': 'tcp://127.0.0.1:%d' % port,
        'capacity_mb': 64, 'transport': 'tcp'})
    log = open(log_path, 'ab')
    proc = subprocess.Popen(
        [os.path.join(service_procs.BIN_DIR, 'memagg-swapd'),
         '--config-file', config], stdout=log, stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL)
    held = []
    try:
        polling.wait_for(lambda: _answers(proc, control, log_path), 30,
                         message='memagg-swapd answers PING')
        # The memagg-swapd of this checkout, not another one's.
        with open('/proc/%d/maps' % proc.pid) as f:
            assert os.path.realpath(_swapd.__file__) in f.read()
        grant, key = uuid.uuid4(), os.urandom(32)
        test_swapd_nbd.ok(control, 'GRANT_ALLOC grant=%s key=%s slab_size=%d '
                          'slabs=0,1' % (grant, key.hex(), SLAB))
        consumer = Consumer(port, grant.bytes, key)
        consumer.round_trip()
        sampler = swapd_flood.Sampler(proc.pid)
        threads_before, rss_before = sampler.status()
        lines_before = swapd_flood.lines(log_path)
        sampler.start()

        refused, statuses = [], []
        floods = swapd_flood.start(port, held, refused, statuses)
        # The consumer reads and writes all through the flood, on its
        # connection and on new ones.
        while any(flood.is_alive() for flood in floods):
            consumer.round_trip()
            if consumer.done % 50 == 0:
                consumer.fresh_round_trip()
        for flood in floods:
            flood.join()
        consumer.round_trip()
        consumer.fresh_round_trip()
        # Every over-cap connection reached the donor's report.
        polling.wait_for(lambda: 'refused from 127.0.0.6' in _read(log_path),
                         10, message='the refusals of 127.0.0.6 logged')
        sampler.stopping.set()
        sampler.join()
        lines = swapd_flood.lines(log_path) - lines_before
        print('threads %d -> peak %d; RSS %d -> peak %d KiB (+%d KiB); '
              '%d log lines; %d round trips; %d flood connections opened'
              % (threads_before, sampler.threads, rss_before,
                 sampler.rss_kb, sampler.rss_kb - rss_before, lines,
                 consumer.done, len(held)))

        assert (len(statuses), set(statuses)) == (10000, {-13})  # EACCES
        assert (sampler.threads
                <= MAX_CONNECTIONS + swapd_flood.THREADS_BESIDES)
        assert sampler.threads <= threads_before + MAX_CONNECTIONS
        assert sampler.rss_kb - rss_before < 16 * 1024
        assert lines < 100, _read(log_path)[-4000:]
        assert consumer.done > 10
        assert 'access refused: no such grant' not in _read(log_path)
        assert proc.poll() is None
    finally:
        for sock in held:
            sock.close()
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()
        shutil.rmtree(sock_dir, ignore_errors=True)
    assert proc.returncode == 0, _read(log_path)[-4000:]
    # Each refusal was counted: what waited was reported at the stop.
    assert _reported(_read(log_path), '127.0.0.2',
                     'connections over the caps') == 200 - 32
    assert _reported(_read(log_path), '127.0.0.8',
                     'frames of an unknown grant or with a wrong key') == 10000


def _reported(log, peer, what):
    """The sum of the counts of ``what`` in the reports of ``peer``."""
    total = 0
    for line in log.splitlines():
        if 'refused from %s since' % peer in line:
            for part in line.rsplit(': ', 1)[-1].split(', '):
                count, _, kind = part.partition(' ')
                if kind == what:
                    total += int(count)
    return total


def _read(path):
    with open(path, errors='replace') as f:
        return f.read()


def _answers(proc, control, log_path):
    assert proc.poll() is None, _read(log_path)
    try:
        return test_swapd_nbd.control(control, 'PING').startswith('OK')
    except OSError:
        return False
