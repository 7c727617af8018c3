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

"""memagg-swapd end to end: two real daemons on this machine (a donor
lending memory over TCP and a consumer serving an export), driven over
their control sockets, with QEMU's own NBD client (qemu-io) reading and
writing the export.  No fakes: RDMA has no device here, so the daemons run
the TCP transport, as [swapd] transport = auto picks on these machines.
Each daemon is started as an operator starts it: ``memagg-swapd
--config-file`` with its own memagg.conf."""
import os
import pathlib
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import uuid

import pytest

from memagg.cmd import swapd as swapd_cmd
from memagg.compute import swapd
from memagg.tests.functional import service_procs
from memagg.tests import polling

pytestmark = [pytest.mark.functional]

MIB = 1 << 20
SLAB = 4 * MIB
SLABS = 4
SIZE = SLAB * SLABS
KEY = 'ab' * 32


def _require(tool):
    if shutil.which(tool) is None:
        if os.environ.get('CI') == 'true':
            pytest.fail('%s is missing: tools/setup.sh installs it' % tool)
        pytest.skip('%s is not installed (tools/setup.sh installs it)' % tool)


def control(path, line, timeout=10):
    """Send one control request; return the reply line."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(path)
        sock.sendall(line.encode() + b'\n')
        data = b''
        while not data.endswith(b'\n'):
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    return data.decode().strip()


def ok(path, line):
    """Send a request that must succeed; its key=values as a dict."""
    reply = control(path, line)
    assert reply.startswith('OK'), '%s -> %s' % (line, reply)
    return dict(word.split('=', 1) for word in reply.split()[1:])


class Swapd:
    """A memagg-swapd process with its own sockets, port and state."""

    def __init__(self, name, sock_dir, state_dir, log_path, capacity_mb=0):
        self.name = name
        self.control = os.path.join(sock_dir, name + '.ctl')
        self.export_dir = os.path.join(sock_dir, name + '-x')
        self.state_dir = str(state_dir)
        self.port = service_procs.free_port()
        self.capacity_mb = capacity_mb
        self.log_path = str(log_path)
        self.proc = None
        self._log = None

    def start(self):
        config = os.path.join(self.state_dir, 'memagg.conf')
        swapd_cmd.write_config(config, {
            'control_socket': self.control, 'export_dir': self.export_dir,
            'state_dir': self.state_dir, 'listen': self.endpoint,
            'capacity_mb': self.capacity_mb, 'transport': 'tcp'},
            debug=True)
        self._log = open(self.log_path, 'ab')
        self.proc = subprocess.Popen(
            [os.path.join(service_procs.BIN_DIR, 'memagg-swapd'),
             '--config-file', config],
            stdout=self._log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL)
        polling.wait_for(self._answers, 30, message='%s answers PING'
                         % self.name)
        return self

    def _answers(self):
        assert self.proc.poll() is None, self.log()
        try:
            return control(self.control, 'PING').startswith('OK')
        except OSError:
            return False

    @property
    def endpoint(self):
        return 'tcp://127.0.0.1:%d' % self.port

    def log(self):
        with open(self.log_path, errors='replace') as f:
            return f.read()

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)
        self._log.close()

    def stop(self):
        """SIGTERM; the exit status (0 for a clean stop)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError('%s ignored SIGTERM; log:\n%s'
                                     % (self.name, self.log()))
        self._log.close()
        return self.proc.returncode


@pytest.fixture(name='swapds')
def swapds_fixture(tmp_path):
    """Make Swapd objects; every one is stopped at the end, and a clean
    SIGTERM stop (exit 0) is asserted for those still running."""
    _require('qemu-io')
    # unix socket paths are limited to 107 bytes: a short directory.
    sock_dir = tempfile.mkdtemp(prefix='sd', dir='/tmp')
    made = []

    def make(name, capacity_mb=0):
        state = tmp_path / name
        state.mkdir(exist_ok=True)
        daemon = Swapd(name, sock_dir, state, tmp_path / (name + '.log'),
                       capacity_mb)
        made.append(daemon)
        return daemon

    yield make
    statuses = {}
    for daemon in made:
        if daemon.proc is not None and not daemon._log.closed:
            statuses[daemon.name] = daemon.stop()
    shutil.rmtree(sock_dir, ignore_errors=True)
    assert all(status == 0 for status in statuses.values()), statuses


def grant_and_export(donor, consumer, key=KEY, export_key=None):
    """GRANT_ALLOC on the donor, EXPORT_CREATE on the consumer, its local
    copy below state_dir/local (the only place memagg-swapd takes)."""
    grant = str(uuid.uuid4())
    alloc = ok(donor.control, 'GRANT_ALLOC grant=%s key=%s slab_size=%d '
               'slabs=%s' % (grant, key, SLAB,
                             ','.join(str(i) for i in range(SLABS))))
    assert alloc['endpoint'] == donor.endpoint
    slabs = ','.join('%s@%s@%s@%s' % (i, alloc['endpoint'], addr,
                                      alloc['rkey'])
                     for i, addr in (s.split(':')
                                     for s in alloc['slabs'].split(',')))
    local = pathlib.Path(consumer.state_dir, 'local', '%s.copy' % grant)
    created = ok(consumer.control, 'EXPORT_CREATE grant=%s key=%s size=%d '
                 'slab_size=%d local=%s slabs=%s'
                 % (grant, export_key or key, SIZE, SLAB, local, slabs))
    assert created['name'] == 'memagg-swap-%s' % grant
    return grant, created['socket'], local


def qemu_io(sock, grant, *commands):
    """Run qemu-io commands on the export; assert none failed."""
    uri = 'nbd+unix:///memagg-swap-%s?socket=%s' % (grant, sock)
    args = ['qemu-io', '-f', 'raw', uri]
    for command in commands:
        args += ['-c', command]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=120)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert 'failed' not in out.lower(), out
    return out


def test_data_goes_through_the_donor_and_unwritten_pages_read_zeros(swapds):
    donor = swapds('donor', capacity_mb=64).start()
    consumer = swapds('consumer').start()
    grant, sock, local = grant_and_export(donor, consumer)

    qemu_io(sock, grant,
            'write -P 0xab 0 1M',
            # across the boundary of slabs 0 and 1
            'write -P 0xcd %d 128k' % (SLAB - 64 * 1024),
            'aio_write -P 0x11 %d 64k' % (2 * SLAB),
            'aio_write -P 0x22 %d 64k' % (2 * SLAB + 64 * 1024),
            'aio_write -P 0x33 %d 64k' % (3 * SLAB + 4096),
            'aio_flush')
    # Zero the consumer's local copy behind its back: what reads back now
    # can only come from the donor.
    with open(local, 'r+b') as f:
        f.write(b'\0' * (SIZE))
    out = qemu_io(sock, grant,
                  'read -P 0xab 0 1M',
                  'read -P 0xcd %d 128k' % (SLAB - 64 * 1024),
                  'aio_read -P 0x11 %d 64k' % (2 * SLAB),
                  'aio_read -P 0x22 %d 64k' % (2 * SLAB + 64 * 1024),
                  'aio_read -P 0x33 %d 64k' % (3 * SLAB + 4096),
                  'aio_flush',
                  'read -P 0 %d 1M' % (SLAB + MIB))
    assert out.count('read ') >= 3

    stats = ok(consumer.control, 'EXPORT_STATS grant=%s' % grant)
    assert int(stats['writes']) >= 5
    assert int(stats['zero_reads']) >= 1
    assert stats['remote_errors'] == '0'
    assert stats['degraded_slabs'] == '0'
    assert stats['local_reads'] == '0'
    assert int(stats['lat_p99_us']) >= int(stats['lat_p50_us']) > 0
    # Reads alone have their own (the swap-ins' latency).
    assert int(stats['read_lat_p99_us']) >= int(stats['read_lat_p50_us']) > 0
    donor_stats = ok(donor.control, 'DONOR_STATS')
    assert donor_stats['used'] == str(SIZE)
    assert donor_stats['refused'] == '0'
    ghost = ok(consumer.control, 'GHOST grant=%s max=100000' % grant)
    events = ghost['events'].split(',')
    assert 'o0' in events and 'i0' in events
    # Reads of never-written pages are no swap-ins.
    assert 'i%d' % ((SLAB + MIB) // 4096) not in events

    assert ok(consumer.control, 'EXPORT_DROP grant=%s delete=1' % grant) == {}
    assert not local.exists()
    assert ok(donor.control, 'GRANT_FREE grant=%s' % grant) == {
        'freed': str(SLABS)}


def test_a_demoted_slab_is_promoted_back_while_the_guest_writes(swapds):
    """Both moves between the tiers: slab 1 is demoted (served from the
    local copy, its donor slab freed), written there, and promoted back
    (SwapdClient.export_promote) while qemu-io writes to it: the donor
    lends the slab again and ends with every page; reads come from it."""
    donor = swapds('donor', capacity_mb=64).start()
    consumer = swapds('consumer').start()
    grant, sock, local = grant_and_export(donor, consumer)
    qemu_io(sock, grant, 'write -P 0xab %d %d' % (SLAB, SLAB))
    assert ok(consumer.control, 'EXPORT_RECLAIM grant=%s slabs=1'
              % grant) == {'reclaimed': '1'}
    assert ok(donor.control, 'GRANT_FREE grant=%s slabs=1' % grant) == {
        'freed': '1'}
    qemu_io(sock, grant, 'write -P 0x5a %d 1M' % SLAB)
    alloc = ok(donor.control, 'GRANT_ALLOC grant=%s key=%s slab_size=%d '
               'slabs=1' % (grant, KEY, SLAB))
    index, addr = alloc['slabs'].split(':')
    # Write i goes to place i % 16 of the slab's second MiB, with pattern
    # i + 1.
    writes = 200
    uri = 'nbd+unix:///memagg-swap-%s?socket=%s' % (grant, sock)
    writer = subprocess.Popen(
        ['qemu-io', '-f', 'raw', uri] +
        [arg for i in range(writes) for arg in (
            '-c', 'write -P %d %d 64k' % (i + 1,
                                          SLAB + MIB + (i % 16) * 65536))],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        pages = swapd.SwapdClient(consumer.control).export_promote(
            grant, {'index': int(index), 'endpoint': alloc['endpoint'],
                    'remote_addr': int(addr)})
    finally:
        out, _ = writer.communicate(timeout=120)
    assert writer.returncode == 0 and 'failed' not in out.lower(), out
    assert pages >= SLAB // 4096
    described = ok(consumer.control, 'EXPORT_DESCRIBE grant=%s' % grant)
    assert 'local_slabs' not in described, described
    # What reads back now can only come from the donor.
    with open(local, 'r+b') as f:
        f.write(b'\0' * SIZE)
    qemu_io(sock, grant, 'read -P 0x5a %d 1M' % SLAB,
            'read -P 0xab %d %d' % (SLAB + 2 * MIB, SLAB - 2 * MIB),
            # The writer's last pattern in each of its 16 places.
            *['read -P %d %d 64k' % (max(range(place, writes, 16)) + 1,
                                     SLAB + MIB + place * 65536)
              for place in range(16)])
    stats = ok(consumer.control, 'EXPORT_STATS grant=%s' % grant)
    assert stats['local_reads'] == '0' and stats['remote_errors'] == '0', (
        stats)


def test_a_wrong_key_is_refused_and_logged_and_costs_no_data(swapds):
    donor = swapds('donor', capacity_mb=64).start()
    consumer = swapds('consumer').start()
    grant, sock, _ = grant_and_export(donor, consumer, export_key='cd' * 32)

    qemu_io(sock, grant, 'write -P 0x5e 0 256k')
    qemu_io(sock, grant, 'read -P 0x5e 0 256k')

    stats = ok(consumer.control, 'EXPORT_STATS grant=%s' % grant)
    assert int(stats['remote_errors']) >= 1
    assert stats['degraded_slabs'] == '1'
    assert int(stats['local_reads']) >= 1
    assert int(ok(donor.control, 'DONOR_STATS')['refused']) >= 1
    assert 'wrong key' in donor.log()
    assert 'served from the local copy' in consumer.log()


def test_killing_the_donor_loses_nothing(swapds):
    donor = swapds('donor', capacity_mb=64).start()
    consumer = swapds('consumer').start()
    grant, sock, _ = grant_and_export(donor, consumer)
    qemu_io(sock, grant, 'write -P 0x77 0 2M',
            'write -P 0x78 %d 2M' % (3 * SLAB))

    donor.kill()

    qemu_io(sock, grant, 'read -P 0x77 0 2M',
            'read -P 0x78 %d 2M' % (3 * SLAB),
            # writes still succeed, to the local copy
            'write -P 0x79 %d 64k' % SLAB,
            'read -P 0x79 %d 64k' % SLAB)
    stats = ok(consumer.control, 'EXPORT_STATS grant=%s' % grant)
    assert int(stats['degraded_slabs']) >= 2
    assert int(stats['local_reads']) >= 2
    # The degraded slabs are in the table on disk: a restart keeps
    # serving them from the local copy.
    described = ok(consumer.control, 'EXPORT_DESCRIBE grant=%s' % grant)
    assert '0' in described['local_slabs'].split(',')


def test_a_restarted_consumer_restores_its_exports(swapds):
    donor = swapds('donor', capacity_mb=64).start()
    consumer = swapds('consumer').start()
    grant, sock, _ = grant_and_export(donor, consumer)
    qemu_io(sock, grant, 'write -P 0x42 %d 1M' % (SLAB - MIB // 2))

    consumer.kill()
    consumer.start()

    assert ok(consumer.control, 'EXPORT_LIST') == {'grants': grant}
    qemu_io(sock, grant, 'read -P 0x42 %d 1M' % (SLAB - MIB // 2),
            'read -P 0 0 1M')
    stats = ok(consumer.control, 'EXPORT_STATS grant=%s' % grant)
    # Still served by the donor; the bitmap came back from the copy.
    assert stats['remote_errors'] == '0'
    assert int(stats['zero_reads']) >= 1


def _nbd_connect(sock_path, name):
    """A raw NBD client past NBD_OPT_GO; returns the socket."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(10)
    sock.connect(sock_path)
    greeting = _recv(sock, 18)
    assert greeting[:16] == b'NBDMAGICIHAVEOPT'
    sock.sendall(struct.pack('>I', 3))
    data = struct.pack('>I', len(name)) + name.encode() + struct.pack('>H', 0)
    sock.sendall(b'IHAVEOPT' + struct.pack('>II', 7, len(data)) + data)
    while True:
        _, _, rtype, length = struct.unpack('>QIII', _recv(sock, 20))
        _recv(sock, length)
        if rtype == 1:      # NBD_REP_ACK
            return sock
        assert rtype == 3, rtype    # NBD_REP_INFO


def _recv(sock, n):
    data = b''
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise EOFError('the server closed after %d bytes' % len(data))
        data += chunk
    return data


def _request(sock, cmd, handle, offset, length):
    sock.sendall(struct.pack('>IHHQQI', 0x25609513, 0, cmd, handle, offset,
                             length))
    magic, error, got = struct.unpack('>IIQ', _recv(sock, 16))
    assert magic == 0x67446698 and got == handle
    return error


def test_malformed_nbd_requests_get_errors_and_the_daemon_serves_on(swapds):
    donor = swapds('donor', capacity_mb=64).start()
    consumer = swapds('consumer').start()
    grant, sock_path, _ = grant_and_export(donor, consumer)
    qemu_io(sock_path, grant, 'write -P 0x61 0 4k')

    sock = _nbd_connect(sock_path, 'memagg-swap-%s' % grant)
    assert _request(sock, 0, 1, SIZE - 4096, 8192) == 22    # beyond: EINVAL
    assert _request(sock, 0, 2, 2 ** 63, 4096) == 22
    assert _request(sock, 99, 3, 0, 0) == 22                # unknown command
    assert _request(sock, 0, 4, 0, 4096) == 0               # still serving
    assert _recv(sock, 4096) == b'\x61' * 4096
    sock.sendall(struct.pack('>IHH', 0x25609513, 0, 0))     # short request
    sock.shutdown(socket.SHUT_WR)
    assert sock.recv(1) == b''                              # closed
    sock.close()

    # The wrong export name is refused; the right one still works.
    with pytest.raises(AssertionError):
        _nbd_connect(sock_path, 'memagg-swap-other')
    qemu_io(sock_path, grant, 'read -P 0x61 0 4k')
    assert consumer.proc.poll() is None
    assert control(consumer.control, 'PING').startswith('OK version=1 ')


def test_ping_says_why_rdma_is_unavailable(swapds):
    consumer = swapds('consumer').start()
    ping = ok(consumer.control, 'PING')
    assert ping['version'] == '1' and ping['transport'] == 'tcp'
    assert ping['rdma'].startswith('unavailable:') or \
        ping['rdma'] == 'available'
    assert ' ' not in ping['rdma']
    assert ping['endpoint'] == consumer.endpoint
