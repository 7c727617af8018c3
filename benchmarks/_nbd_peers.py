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

"""NBD servers for benchmarks/swap_nbd_fio.py and swapd_flood.py:
memagg-swapd (a donor and a
consumer over loopback TCP, its pages in clear or sealed), nbdkit's memory
plugin and qemu-nbd on a tmpfs file, and nbdkit relaying to its memory
plugin (memagg's hops, for reference).

Each server is started by ``start()``, which returns once it answers (an
NBD greeting on its TCP port or unix socket, or PING on swapd's control
socket) or raises
``ServerError`` with the tail of its log; ``uri`` is what fio's nbd engine
connects to; ``pids`` the processes whose CPU the benchmark counts;
``stop()`` ends them (SIGTERM, then SIGKILL) and is safe to call twice or
after a failed start.
"""
import collections
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid

from memagg.cmd import swapd as swapd_cmd
from memagg.compute import swapd
from memagg.tests.functional import service_procs

MIB = 1 << 20
READY_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0


class ServerError(Exception):
    """A server did not start, did not answer, or refused a request."""


def _wait(predicate, proc_list, what, timeout=READY_TIMEOUT):
    deadline = time.monotonic() + timeout
    while True:
        for proc in proc_list:
            if proc.poll() is not None:
                raise ServerError('%s exited with %s before it answered'
                                  % (what, proc.returncode))
        if predicate():
            return
        if time.monotonic() >= deadline:
            raise ServerError('%s did not answer within %.0f s'
                              % (what, timeout))
        time.sleep(0.05)


def _log_tails(paths, lines=10):
    out = []
    for path in paths:
        try:
            with open(path, errors='replace') as f:
                tail = f.read().splitlines()[-lines:]
        except OSError:
            continue
        if tail:
            out.append('\n--- %s ---\n%s' % (path, '\n'.join(tail)))
    return ''.join(out)


def _nbd_greets(address):
    """True when an NBD server sends its greeting on address: a TCP port
    on 127.0.0.1, or a unix socket's path."""
    try:
        if isinstance(address, str):
            conn = socket.socket(socket.AF_UNIX)
            conn.settimeout(1)
            conn.connect(address)
        else:
            conn = socket.create_connection(('127.0.0.1', address),
                                            timeout=1)
        with conn as s:
            greeting = b''
            while len(greeting) < 8:
                chunk = s.recv(8 - len(greeting))
                if not chunk:
                    return False
                greeting += chunk
            return greeting == b'NBDMAGIC'
    except OSError:
        return False


class _Server:
    """Processes started with their output in log files under ``workdir``."""

    name = None

    def __init__(self, workdir, size):
        self.workdir = workdir
        self.size = size
        self.uri = None
        self._procs = []
        self._logs = []

    @property
    def pids(self):
        return [p.pid for p in self._procs]

    def _spawn(self, label, argv):
        log_path = os.path.join(self.workdir, '%s.log' % label)
        with open(log_path, 'wb') as log:
            proc = subprocess.Popen(argv, stdout=log,
                                    stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL)
        self._procs.append(proc)
        self._logs.append(log_path)
        return proc

    def log_tails(self):
        return _log_tails(self._logs)

    def stop(self):
        """SIGTERM every process, then SIGKILL what is left after a while."""
        for proc in self._procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self._procs:
            try:
                proc.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


class NbdkitMemory(_Server):
    """nbdkit's memory plugin (a sparse array in RAM) over TCP."""

    name = 'nbdkit'
    description = 'nbdkit memory plugin, TCP'

    def start(self):
        self.uri = self._start_memory('nbdkit')

    def _start_memory(self, label):
        """Start nbdkit's memory plugin on a free port; its URI."""
        port = service_procs.free_port()
        proc = self._spawn(label, [
            'nbdkit', '--foreground', '--ipaddr', '127.0.0.1',
            '--port', str(port), 'memory', str(self.size)])
        _wait(lambda: _nbd_greets(port), [proc], label)
        return 'nbd://127.0.0.1:%d/' % port


class NbdkitRelay(NbdkitMemory):
    """memagg's hops with nbdkit at both ends: fio on a unix socket to
    nbdkit's nbd plugin, which forwards each request over loopback TCP to
    nbdkit's memory plugin.  A reference for the cost of the extra hop, not
    a peer a user would pick."""

    name = 'nbdkit-relay'
    description = 'nbdkit nbd plugin on a unix socket -> nbdkit memory, TCP'

    def start(self):
        backend = self._start_memory('nbdkit-memory')
        sock = os.path.join(self.workdir, 'relay.sock')
        self._spawn('nbdkit-relay', [
            'nbdkit', '--foreground', '--unix', sock, 'nbd',
            'uri=' + backend])
        _wait(lambda: _nbd_greets(sock), self._procs, 'nbdkit-relay')
        self.uri = 'nbd+unix:///?socket=%s' % sock


class QemuNbdTmpfs(_Server):
    """qemu-nbd serving a raw file on /dev/shm over TCP."""

    name = 'qemu-nbd'
    description = 'qemu-nbd, raw file on /dev/shm, TCP'

    def start(self):
        fd, self._image = _shm_file('memagg-bench-qemu-nbd-')
        os.ftruncate(fd, self.size)
        os.close(fd)
        port = service_procs.free_port()
        # -t: keep serving after the readiness probe disconnects; -e 2: the
        # probe and fio may overlap while the probe's socket closes.
        proc = self._spawn('qemu-nbd', [
            'qemu-nbd', '--format=raw', '--persistent', '--shared=2',
            '--bind=127.0.0.1', '--port=%d' % port, '--export-name=',
            self._image])
        _wait(lambda: _nbd_greets(port), [proc], 'qemu-nbd')
        self.uri = 'nbd://127.0.0.1:%d/' % port

    def stop(self):
        super().stop()
        if getattr(self, '_image', None):
            os.unlink(self._image)
            self._image = None


def _shm_file(prefix):
    path = '/dev/shm/%s%s' % (prefix, uuid.uuid4().hex)
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600), path


def swapd_command(config_file):
    """memagg-swapd's console script (or its module where not installed)
    with ``config_file``, as an operator starts it."""
    script = os.path.join(os.path.dirname(sys.executable), 'memagg-swapd')
    if os.access(script, os.X_OK):
        return [script, '--config-file', config_file]
    return [sys.executable, '-m', 'memagg.cmd.swapd', '--config-file',
            config_file]


def _swapd_call(what, call, *args, **kwargs):
    """A SwapdClient call; its failures as ServerError."""
    try:
        return call(*args, **kwargs)
    except (swapd.SwapdError, swapd.SwapdUnavailable) as exc:
        raise ServerError('swapd %s: %s' % (what, exc)) from exc


def _pings(path):
    try:
        swapd.SwapdClient(path, timeout=1).ping()
        return True
    except (swapd.SwapdError, swapd.SwapdUnavailable):
        return False


#: A memagg-swapd of MemaggSwapd: its pid, donor port (on 127.0.0.1),
#: memagg.conf and log file.
SwapdProcess = collections.namedtuple('SwapdProcess',
                                      'pid port config_file log')


class MemaggSwapd(_Server):
    """memagg-swapd: a donor holding the slabs and a consumer serving the
    export over NBD on a unix socket, with loopback TCP between them.

    The grant is made as memagg-compute makes it: GRANT_ALLOC on the donor,
    then EXPORT_CREATE on the consumer with the slabs' endpoint, address
    and rkey. The consumer's local durability copy lives in ``local_dir``,
    which holds the consumer's state directory for it: memagg-swapd takes
    a local copy only below its state_dir/local.
    ``pids`` are the donor's, then the consumer's; ``swapds`` their
    SwapdProcess by role ('donor', 'consumer').  The pages travel and
    sit on the donor in clear (EXPORT_CREATE without seal), which start()
    checks in EXPORT_DESCRIBE.
    """

    name = 'memagg'
    description = 'memagg-swapd, donor over loopback TCP'
    seal = False
    #: The donor's [swapd] transport options and its endpoint's scheme.
    transport = {'transport': 'tcp'}
    scheme = 'tcp'

    def __init__(self, workdir, size, slab_size, local_dir):
        super().__init__(workdir, size)
        self.slab_size = slab_size
        self.local_dir = local_dir
        self.grant = str(uuid.uuid4())
        self._consumer_control = None
        self.swapds = {}

    def _start_swapd(self, role, capacity, state_dir=None):
        base = os.path.join(self.workdir, role)
        control_path = os.path.join(base, 'control.sock')
        for sub in ('exports', 'state'):
            os.makedirs(os.path.join(base, sub), exist_ok=True)
        config_file = os.path.join(base, 'memagg.conf')
        port = service_procs.free_port()
        swapd_cmd.write_config(config_file, {
            'control_socket': control_path,
            'export_dir': os.path.join(base, 'exports'),
            'state_dir': state_dir or os.path.join(base, 'state'),
            'listen': '%s://127.0.0.1:%d' % (self.scheme, port),
            'capacity_mb': capacity // MIB, **self.transport})
        proc = self._spawn('swapd-%s' % role, swapd_command(config_file))
        self.swapds[role] = SwapdProcess(proc.pid, port, config_file,
                                         self._logs[-1])
        _wait(lambda: _pings(control_path), [proc],
              'memagg-swapd (%s)' % role)
        return control_path

    def start(self):
        if self.size % self.slab_size:
            raise ServerError('size %d is not a multiple of the slab size %d'
                              % (self.size, self.slab_size))
        n_slabs = self.size // self.slab_size
        donor = self._start_swapd('donor', self.size)
        self._state = tempfile.mkdtemp(prefix='memagg-bench-',
                                       dir=self.local_dir)
        consumer = self._start_swapd('consumer', 0, self._state)
        self._consumer_control = consumer
        key = secrets.token_hex(32)
        granted = _swapd_call(
            'GRANT_ALLOC', swapd.SwapdClient(donor, READY_TIMEOUT).grant_alloc,
            self.grant, key, self.slab_size, range(n_slabs))
        if len(granted['slabs']) != n_slabs:
            raise ServerError('the donor granted %d of %d slabs'
                              % (len(granted['slabs']), n_slabs))
        self._local = os.path.join(self._state, 'local',
                                   '%s.img' % self.grant)
        slabs = [dict(slab, endpoint=granted['endpoint'],
                      rkey=granted['rkey']) for slab in granted['slabs']]
        export = _swapd_call(
            'EXPORT_CREATE',
            swapd.SwapdClient(consumer, READY_TIMEOUT).export_create,
            self.grant, key, self.size, self.slab_size, self._local, slabs,
            seal=self.seal)
        # A swapd that left the pages in clear (or sealed them unasked)
        # would make the comparison of the two meaningless.
        described = _swapd_call(
            'EXPORT_DESCRIBE',
            swapd.SwapdClient(consumer, READY_TIMEOUT).export_describe,
            self.grant)
        if described.get('seal') != ('1' if self.seal else None):
            raise ServerError('the export is %s: asked for %s'
                              % ('sealed' if described.get('seal')
                                 else 'in clear',
                                 'sealing' if self.seal else 'clear pages'))
        self.uri = 'nbd+unix:///%s?socket=%s' % (export['name'],
                                                 export['socket'])

    def stats(self):
        """The export's EXPORT_STATS counters (ints)."""
        return _swapd_call(
            'EXPORT_STATS',
            swapd.SwapdClient(self._consumer_control).export_stats,
            self.grant)

    def stop(self):
        try:
            if self._consumer_control and self._procs[-1].poll() is None:
                swapd.SwapdClient(self._consumer_control).export_drop(
                    self.grant, delete=True)
        except (swapd.SwapdError, swapd.SwapdUnavailable):
            # Stopping anyway; the local copy is removed below.
            pass
        finally:
            super().stop()
            state = getattr(self, '_state', None)
            if state:
                shutil.rmtree(state, ignore_errors=True)


class MemaggSwapdSealed(MemaggSwapd):
    """memagg-swapd as MemaggSwapd, its pages sealed by the consumer
    (EXPORT_CREATE seal=1: AEGIS-256X2 with a key of the export's own), as
    memagg-compute creates exports by default."""

    name = 'memagg-sealed'
    description = 'memagg-swapd, pages sealed, donor over loopback TCP'
    seal = True


class MemaggSwapdFabric(MemaggSwapd):
    """memagg-swapd as MemaggSwapd, the donor lending over its rdma
    transport (libfabric's one-sided reads and writes) on the provider
    PROVIDER: with no RDMA device here, libfabric's tcp provider, so what
    this measures is the cost of the fabric layer, not RDMA's speed."""

    PROVIDER = 'tcp'
    name = 'memagg-fabric'
    description = ('memagg-swapd, donor over libfabric (%s provider, '
                   'loopback)' % PROVIDER)
    transport = {'transport': 'rdma', 'fabric_provider': PROVIDER}
    scheme = 'rdma'
