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

"""Real memagg processes for functional tests: a RabbitMQ virtual host,
config files, start, stop."""
import contextlib
import os
import random
import select
import signal
import socket
import socketserver
import subprocess
import sys
import threading
import uuid

import pytest
import requests

from memagg.common import context
from memagg.common import exceptions
from memagg.common import rpc
from memagg.scheduler import rpcapi as scheduler_rpcapi
from memagg.tests import grant_key
from memagg.tests import polling
from memagg.tests.unit.api import live

# The RabbitMQ server the tests use, without a virtual host.
RABBIT_SERVER = os.environ.get('MEMAGG_TEST_RABBIT_SERVER',
                               'rabbit://guest:guest@127.0.0.1:5672')
RABBIT_USER = 'guest'
BIN_DIR = os.path.dirname(sys.executable)


def _rabbitmqctl(*args):
    subprocess.run(('rabbitmqctl', '-q') + args, check=True,
                   stdout=subprocess.DEVNULL, timeout=120)


@pytest.fixture(scope='session', name='rabbit_url')
def rabbit_url_fixture():
    """transport_url of a RabbitMQ virtual host of this test session.

    RabbitMQ names queues after topic and server, whatever the exchange, so
    a virtual host of its own keeps this run apart from any other; deleting
    it drops every queue the run made.
    """
    vhost = 'memagg_test_%s' % uuid.uuid4().hex[:12]
    _rabbitmqctl('add_vhost', vhost)
    try:
        _rabbitmqctl('set_permissions', '-p', vhost, RABBIT_USER,
                     '.*', '.*', '.*')
        yield '%s/%s' % (RABBIT_SERVER, vhost)
    finally:
        _rabbitmqctl('delete_vhost', vhost)


def write_config(path, sections):
    """Write ``{section: {option: value}}`` as an oslo.config INI file;
    [database] secret_key_file is the tests' own key unless given."""
    if 'database' in sections:
        sections = dict(sections, database=dict(
            {'secret_key_file': grant_key.path()}, **sections['database']))
    with open(path, 'w') as f:
        for section, options in sections.items():
            f.write('[%s]\n' % section)
            for key, value in options.items():
                f.write('%s = %s\n' % (key, value))
            f.write('\n')
    return path


class Process:
    """A console script started with its output in a log file; ``env``
    adds to the environment it inherits."""

    def __init__(self, name, args, log_path, env=None):
        self.name = name
        self.log_path = log_path
        self._log = open(log_path, 'wb')
        self.proc = subprocess.Popen(
            [os.path.join(BIN_DIR, name)] + list(args),
            stdout=self._log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, env=dict(os.environ, **(env or {})))

    def log(self):
        with open(self.log_path, errors='replace') as f:
            return f.read()

    def alive(self):
        return self.proc.poll() is None

    def stop(self, timeout=30, sig=signal.SIGTERM):
        """``sig`` (SIGINT: Ctrl-C), then wait; kill and fail if it does
        not exit in time."""
        try:
            if self.alive():
                self.proc.send_signal(sig)
                try:
                    self.proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    waits = kernel_waits(self.proc.pid)
                    self.proc.kill()
                    self.proc.wait()
                    raise AssertionError(
                        '%s ignored %s for %s s; where its threads '
                        'waited:\n%s\nlog:\n%s'
                        % (self.name, sig.name, timeout, waits, self.log()))
        finally:
            self._log.close()
        return self.proc.returncode


def kernel_waits(pid):
    """Where each thread of process ``pid`` waits in the kernel (its
    wchan, system call and kernel stack, which root may read): for a
    process that did not act on a signal, a thread stuck in a call that
    never comes back to the interpreter shows there."""
    lines = []
    try:
        tids = sorted(os.listdir('/proc/%d/task' % pid), key=int)
    except OSError as exc:
        return str(exc)
    for tid in tids:
        base = '/proc/%d/task/%s/' % (pid, tid)
        parts = []
        for name in ('comm', 'wchan', 'syscall', 'stack'):
            try:
                with open(base + name) as f:
                    parts.append(f.read().strip().replace('\n', ' < '))
            except OSError as exc:
                parts.append('(%s: %s)' % (name, exc.strerror))
        lines.append('%s %s' % (tid, ' | '.join(parts)))
    return '\n'.join(lines)


def answers(url):
    """Whether GET ``url`` answers 200 now. A refused connection or a read
    timeout is "not yet": uWSGI (memagg-api) accepts connections before its
    workers have loaded the app."""
    try:
        return requests.get(url, timeout=10).status_code == 200
    except (requests.ConnectionError, requests.Timeout):
        return False


@contextlib.contextmanager
def control_plane(conf, rabbit_url, tmp_path, options, start_timeout=60,
                  stop_timeout=30):
    """Run memagg-scheduler and memagg-api on ``options`` (config sections,
    which must name [DEFAULT] control_exchange and [scheduler] topic) and
    point this process's RPC at the same exchange and topic; yield
    (API URL, processes) once the scheduler answers a ping and the API
    GET /. Both must exit 0 when stopped."""
    config = write_config(tmp_path / 'memagg.conf', options)
    rpc.cleanup()
    conf.config(control_exchange=options['DEFAULT']['control_exchange'])
    conf.config(topic=options['scheduler']['topic'], group='scheduler')
    rpc.init(url=rabbit_url)
    procs = []
    try:
        for name in ('memagg-scheduler', 'memagg-api'):
            procs.append(Process(name, ['--config-file', str(config)],
                                 tmp_path / ('%s.log' % name)))
        url = 'http://127.0.0.1:%d' % options['api']['port']
        # A cast before the scheduler has declared its queue would be lost.
        polling.wait_for(lambda: alive(procs) and scheduler_answers(),
                         start_timeout, message='memagg-scheduler answering')
        polling.wait_for(lambda: alive(procs) and answers(url + '/'),
                         start_timeout, message='memagg-api answering')
        yield url, procs
    finally:
        rpc.cleanup()
        # memagg-scheduler finishes the calls in flight before it exits.
        codes = stop_all(procs, timeout=stop_timeout)
    assert codes == {'memagg-scheduler': 0, 'memagg-api': 0}, codes


def stop_all(procs, timeout=30):
    """Stop every one of ``procs`` (Process.stop), even when one ignored
    SIGTERM, so that none outlives its test; {name: exit code}. Fails
    afterwards with the first one that ignored SIGTERM."""
    codes, ignored = {}, []
    for proc in procs:
        try:
            codes[proc.name] = proc.stop(timeout=timeout)
        except AssertionError as exc:
            codes[proc.name] = proc.proc.returncode
            ignored.append(exc)
    if ignored:
        raise ignored[0]
    return codes


def alive(procs):
    """True while every one of ``procs`` runs; fails with the log of the
    first that exited."""
    for proc in procs:
        assert proc.alive(), '%s exited:\n%s' % (proc.name, proc.log())
    return True


def scheduler_answers():
    """memagg-scheduler's answer to a ping on this process's RPC exchange
    and topic, or None when none came within a second."""
    try:
        return scheduler_rpcapi.SchedulerAPI().ping(
            context.get_admin_context(), timeout=1)
    except exceptions.RPCTimeout:
        return None


# Ports handed to servers that a test starts: below the kernel's ephemeral
# range (32768-60999 by default), which a port bound to 0 and closed again
# went back to, for any outgoing connection on the host to take before the
# server bound it. A block per pytest process (the host lane's, each
# parallel worker's), so two never hand out the same port.
PORT_BLOCK = 1500
PORT_BASE = 20000
_next_port = None
_port_lock = threading.Lock()


def _port_block():
    """The first port of this pytest process's block: the host lane's (no
    xdist worker) is the first, worker gwN's the (N + 2)th."""
    worker = os.environ.get('PYTEST_XDIST_WORKER', '')
    index = int(worker[2:]) + 1 if worker.startswith('gw') else 0
    return PORT_BASE + (index % 8) * PORT_BLOCK


def free_port():
    """A loopback TCP port nothing listens on now, that no other test
    process of this run hands out and no outgoing connection takes.
    Successive calls give successive ports of this process's block from a
    random point, so that a script a test starts, which counts on its own
    in the same block, seldom meets its test's ports; ports in use are
    skipped."""
    global _next_port
    base = _port_block()
    with _port_lock:
        if _next_port is None:
            _next_port = random.randrange(PORT_BLOCK)
        for _ in range(PORT_BLOCK):
            port = base + _next_port % PORT_BLOCK
            _next_port += 1
            with socket.socket() as sock:
                try:
                    sock.bind(('127.0.0.1', port))
                except OSError:
                    continue
            return port
    raise AssertionError('no free port in %d-%d' % (base, base + PORT_BLOCK))


class TcpForwarder:
    """Listens on 127.0.0.1:``port`` and relays each connection to
    ``upstream``: a (host, port) TCP address, or a unix socket's path.
    Makes a closed port reachable on demand, or a unix socket reachable
    over TCP."""

    def __init__(self, port, upstream):
        self.upstream = upstream
        forwarder = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self):
                forwarder._relay(self.request)

        socketserver.ThreadingTCPServer.allow_reuse_address = True
        self.server = socketserver.ThreadingTCPServer(('127.0.0.1', port),
                                                      Handler)
        self.server.daemon_threads = True
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self.server.serve_forever,
                                        kwargs={'poll_interval': live.POLL_S},
                                        daemon=True)
        self._thread.start()

    def _connect(self):
        if isinstance(self.upstream, str):
            up = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                up.connect(self.upstream)
            except OSError:
                up.close()
                raise
            return up
        up = socket.create_connection(self.upstream, timeout=10)
        up.settimeout(None)
        return up

    def _relay(self, client):
        with self._connect() as up:
            peers = {client: up, up: client}
            while not self._stopped.is_set():
                readable, _, _ = select.select(list(peers), [], [], 0.5)
                for sock in readable:
                    data = sock.recv(65536)
                    if not data:
                        return
                    peers[sock].sendall(data)

    def stop(self):
        self._stopped.set()
        self.server.shutdown()
        self.server.server_close()
        self._thread.join()


class ForwarderProcess:
    """A TcpForwarder from a free loopback port to the TCP address
    ``upstream``, run in a child process: stop() kills the child, which cuts
    every relayed connection at once, and start() listens again on the same
    port. Nothing of it lives in the test's process, whose threads and
    descriptors a long suite has worn."""

    _SCRIPT = ('import signal, sys\n'
               'from memagg.tests.functional import service_procs\n'
               'service_procs.TcpForwarder(int(sys.argv[1]),'
               ' (sys.argv[2], int(sys.argv[3])))\n'
               'print("ready", flush=True)\n'
               'signal.pause()\n')

    def __init__(self, upstream):
        self.upstream = upstream
        self.port = free_port()
        self._proc = None

    def start(self, timeout=30):
        """Listen; return once the child says it does."""
        self._proc = subprocess.Popen(
            [sys.executable, '-c', self._SCRIPT, str(self.port),
             self.upstream[0], str(self.upstream[1])],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
        ready = select.select([self._proc.stdout], [], [], timeout)[0]
        assert ready and self._proc.stdout.readline() == b'ready\n', (
            'forwarder to %s:%d did not start' % self.upstream)

    def stop(self):
        """Kill the child (idempotent)."""
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            self._proc.stdout.close()
            self._proc = None
