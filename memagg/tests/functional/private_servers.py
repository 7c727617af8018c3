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

"""A RabbitMQ node and a MariaDB server of a test's own, which the test may
stop, kill and start again.

They are the distribution's real servers (Debian's rabbitmq-server and
mariadbd) on ports and directories of their own, so restarting them touches
no other test, nor the servers .ci/run starts for the rest of the suite.
"""
import os
import signal
import socket
import subprocess
import time

from memagg.tests.functional import service_procs
from memagg.tests import polling

RABBITMQ_SERVER = '/usr/lib/rabbitmq/bin/rabbitmq-server'


def _listening(port):
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(('127.0.0.1', port)) == 0


class _Server:
    """A server process in a session (process group) of its own, with its
    output in ``<workdir>/<name>.log``; ``start`` returns once ``port``
    accepts connections."""

    name = None

    def __init__(self, workdir, start_timeout=60):
        self.workdir = workdir
        self.port = service_procs.free_port()
        self.start_timeout = start_timeout
        self.proc = None
        self.starts = 0

    def command(self):
        raise NotImplementedError

    def environment(self):
        return os.environ

    def log(self):
        with open(self.workdir / ('%s.log' % self.name),
                  errors='replace') as f:
            return f.read()

    def start(self):
        self.starts += 1
        with open(self.workdir / ('%s.log' % self.name), 'ab') as log:
            self.proc = subprocess.Popen(
                self.command(), stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, env=self.environment(),
                start_new_session=True)

        def up():
            assert self.proc.poll() is None, (
                '%s exited (%s):\n%s' % (self.name, self.proc.returncode,
                                         self.log()[-4000:]))
            return _listening(self.port)
        polling.wait_for(up, self.start_timeout, interval=0.2,
                         message='%s listening on %d' % (self.name,
                                                         self.port))

    def stop(self, sig=signal.SIGTERM, timeout=60):
        """Send ``sig`` to the server's process group and wait until it is
        gone and its port closed. SIGKILL is a crash."""
        if self.proc is None or self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, sig)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        # Children of the group (Erlang's helpers) go with it.
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        polling.wait_for(lambda: not _listening(self.port), timeout,
                         message='%s port %d closed' % (self.name,
                                                        self.port))


class RabbitNode(_Server):
    """A RabbitMQ node named memagg-<port>@localhost, no plug-ins; AMQP on
    ``port`` with the default guest user (loopback only)."""

    name = 'rabbitmq'

    def __init__(self, workdir, start_timeout=90):
        super().__init__(workdir, start_timeout)
        self.dist_port = service_procs.free_port()
        (workdir / 'enabled_plugins').write_text('[].\n')

    @property
    def url(self):
        return 'rabbit://guest:guest@127.0.0.1:%d/' % self.port

    def command(self):
        return [RABBITMQ_SERVER]

    def environment(self):
        work = str(self.workdir)
        return dict(
            os.environ, HOME=work,
            RABBITMQ_NODENAME='memagg-%d@localhost' % self.port,
            RABBITMQ_NODE_IP_ADDRESS='127.0.0.1',
            RABBITMQ_NODE_PORT=str(self.port),
            RABBITMQ_DIST_PORT=str(self.dist_port),
            RABBITMQ_MNESIA_BASE=work + '/mnesia',
            RABBITMQ_LOG_BASE=work + '/log',
            RABBITMQ_ENABLED_PLUGINS_FILE=work + '/enabled_plugins',
            RABBITMQ_CONFIG_FILE=work + '/rabbitmq',
            RABBITMQ_PID_FILE=work + '/rabbitmq.pid')


class MariaDBServer(_Server):
    """A MariaDB server on a data directory of its own (made with
    mariadb-install-db on first start); root without a password on
    127.0.0.1:``port``."""

    name = 'mariadb'

    @property
    def url(self):
        return 'mysql+pymysql://root@127.0.0.1:%d' % self.port

    def command(self):
        return ['mariadbd', '--no-defaults', '--user=root',
                '--datadir=%s' % (self.workdir / 'data'),
                '--socket=%s' % (self.workdir / 'mariadb.sock'),
                '--pid-file=%s' % (self.workdir / 'mariadb.pid'),
                '--bind-address=127.0.0.1', '--port=%d' % self.port,
                '--skip-log-bin', '--innodb-buffer-pool-size=64M']

    def start(self):
        if not (self.workdir / 'data').exists():
            subprocess.run(
                ['mariadb-install-db', '--no-defaults', '--user=root',
                 '--datadir=%s' % (self.workdir / 'data'),
                 '--auth-root-authentication-method=normal',
                 '--skip-test-db'],
                check=True, stdout=subprocess.DEVNULL,
                stderr=subprocess.STDOUT, timeout=120)
        super().start()


def outage(server, seconds, sig=signal.SIGTERM):
    """Stop ``server`` with ``sig``, keep it down ``seconds``, start it on
    the same port and data; (down_at, up_at) in time.time()."""
    server.stop(sig)
    down_at = time.time()
    # The outage's length is the test's input, not a wait for a state.
    time.sleep(seconds)
    server.start()
    return down_at, time.time()
