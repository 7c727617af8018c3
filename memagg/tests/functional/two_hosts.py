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

"""Two memagg hosts on one machine, for the real remote-swap tests.

The consumer host is this machine's libvirtd (qemu:///system, the guests
run there) with a memagg-swapd of its own, whose export sockets QEMU's user
can reach, and a memagg-compute. The donor host is a second memagg-swapd
that lends memory ([swapd] capacity_mb) over TCP on its own port, and a second
memagg-compute under another [DEFAULT] host name, whose hypervisor is
libvirt's test driver: the donor runs no guest, it only lends. One
memagg-scheduler on RabbitMQ and MariaDB makes the grants between them.

Each host has its own control socket, export and state directories and TCP
port, so nothing is shared but the loopback interface: TESTBED.md accepts "a
second swapd as the donor"; a second libvirtd in a mount namespace would add
nothing the donor uses.

The ``two_hosts`` fixture starts everything and stops it (SIGTERM, then
SIGKILL) however the test ends, and prints every daemon's log (pytest shows
it with a failure); a daemon that did not stop cleanly fails the test after
its body (running()).
"""
import contextlib
import dataclasses
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import uuid

import pytest

from memagg.cmd import swapd as swapd_cmd
from memagg.common import context
from memagg.common import exceptions
from memagg.common import rpc
from memagg.compute import rpcapi as compute_rpcapi
from memagg.compute import swapd as swapd_client
from memagg.scheduler import rpcapi as scheduler_rpcapi
from memagg.tests.functional import guest_fixtures
from memagg.tests.functional import service_procs
from memagg.tests import polling

# The user QEMU runs as under Debian's libvirt (qemu.conf's default).
QEMU_USER = 'libvirt-qemu'
RPC_TIMEOUT = 30
# What the donor lends: room for a grant of a 256 MiB guest and more.
DONOR_CAPACITY_MB = 512


def budget(guest_memory_mb, guests, min_guest_mb=64):
    """A consumer's options holding its guests to ``guest_memory_mb`` in
    all, fixed (this machine's reported host memory grows while tests
    run), each guest ballooned down to ``min_guest_mb`` if need be. Its
    guests are the domains whose name the regular expression ``guests``
    matches: another test's guests on the same libvirtd are left alone."""
    return {'compute': {'guest_memory_mb': guest_memory_mb,
                        'domain_name_regex': guests},
            'local_policy': {'min_guest_mb': min_guest_mb}}


class Swapd:
    """One memagg-swapd process with its directories and memagg.conf under
    ``root``, started as an operator starts it (``--config-file``)."""

    def __init__(self, name, root, capacity_mb=0, socket_user=None,
                 socket_group=None, user=None, prefix=(),
                 fabric_provider=None, transport=None):
        """``user``: the owner of its directories; ``prefix``: the command
        that runs the daemon (e.g. as ``user``); ``fabric_provider``: lend
        over the rdma transport (libfabric) on that provider, and reach
        donors' rdma endpoints on it; None: over TCP. ``transport``: its
        [swapd] transport, when not the one fabric_provider implies."""
        self.name = name
        self.fabric_provider = fabric_provider
        self._transport = transport or (
            'rdma' if fabric_provider else 'tcp')
        self.prefix = list(prefix)
        self.dir = os.path.join(root, name)
        self.control = os.path.join(self.dir, 'control.sock')
        self.export_dir = os.path.join(self.dir, 'exports')
        self.state_dir = os.path.join(self.dir, 'state')
        self.log_path = os.path.join(self.dir, 'swapd.log')
        self.port = service_procs.free_port()
        self.endpoint = '%s://127.0.0.1:%d' % (
            'rdma' if fabric_provider else 'tcp', self.port)
        self.capacity_mb = capacity_mb
        self.socket_user = socket_user
        self.proc = None
        self._log = None
        for path in (self.dir, self.export_dir, self.state_dir):
            os.makedirs(path, exist_ok=True)
        # QEMU (an unprivileged user) walks to the export sockets.
        os.chmod(self.dir, 0o755)
        os.chmod(self.export_dir, 0o755)
        if user is not None:
            entry = pwd.getpwnam(user)
            for path in (self.dir, self.export_dir, self.state_dir):
                os.chown(path, entry.pw_uid, entry.pw_gid)
        self.config_file = os.path.join(self.dir, 'memagg.conf')
        swapd_cmd.write_config(self.config_file, {
            'control_socket': self.control, 'export_dir': self.export_dir,
            'state_dir': self.state_dir, 'listen': self.endpoint,
            'capacity_mb': capacity_mb, **self.transport(),
            'socket_user': socket_user, 'socket_group': socket_group},
            debug=True)

    def transport(self):
        """Its [swapd] transport options."""
        if self.fabric_provider is None:
            return {'transport': self._transport}
        return {'transport': self._transport,
                'fabric_provider': self.fabric_provider}

    def local_copy(self, name):
        """A local copy's path where memagg-swapd accepts it: below
        state_dir/local, as memagg-compute places them."""
        return os.path.join(self.state_dir, 'local', name)

    def argv(self):
        return self.prefix + [
            os.path.join(service_procs.BIN_DIR, 'memagg-swapd'),
            '--config-file', self.config_file]

    def start(self, timeout=30):
        """Start the daemon (again, after a stop or kill) and wait until its
        control socket answers PING."""
        assert self.proc is None or self.proc.poll() is not None
        if os.path.exists(self.control):
            os.unlink(self.control)  # a killed daemon leaves it behind
        self._log = open(self.log_path, 'ab')
        self.proc = subprocess.Popen(self.argv(), stdout=self._log,
                                     stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)

        def answers():
            assert self.proc.poll() is None, (
                '%s exited with %s; log:\n%s'
                % (self.name, self.proc.returncode, self.log()))
            try:
                return self.client().ping()
            except swapd_client.SwapdUnavailable:
                return None
        return polling.wait_for(answers, timeout, interval=0.2,
                                message='%s answering PING' % self.name)

    def client(self, timeout=10.0):
        return swapd_client.SwapdClient(self.control, timeout)

    def log(self):
        try:
            with open(self.log_path, errors='replace') as f:
                return f.read()
        except FileNotFoundError:
            return ''

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def kill(self):
        """SIGKILL: the daemon dies with what it holds in memory."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)
        self._log.close()
        return self.proc.returncode

    def stop(self, timeout=30):
        """SIGTERM and wait (SIGKILL after ``timeout`` s); the exit code,
        None when it was not running."""
        if self.proc is None:
            return None
        if self.proc.poll() is not None:
            self._log.close()
            return None  # killed or failed earlier: the test saw it
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            code = 'ignored SIGTERM for %d s' % timeout
        self._log.close()
        return code


@contextlib.contextmanager
def donor_and_consumer(prefix, donor_mb, fabric_provider=None, **consumer):
    """A donor memagg-swapd lending ``donor_mb`` and a consumer's
    (``consumer``: more Swapd arguments), both on ``fabric_provider``
    (None: TCP), under a new directory of /var/tmp (short: a unix socket's
    path holds 107 bytes); both must stop cleanly."""
    root = tempfile.mkdtemp(prefix=prefix, dir='/var/tmp')
    os.chmod(root, 0o755)
    donor = Swapd('donor', root, capacity_mb=donor_mb,
                  fabric_provider=fabric_provider)
    consumer = Swapd('consumer', root, fabric_provider=fabric_provider,
                     **consumer)
    try:
        donor.start()
        consumer.start()
        yield donor, consumer
    finally:
        codes = [d.stop() for d in (donor, consumer)]
        logs = donor.log() + consumer.log()
        shutil.rmtree(root, ignore_errors=True)
        assert codes == [0, 0], logs


@dataclasses.dataclass
class Host:
    """A memagg "host": its name, its memagg-swapd and memagg-compute, and
    the hypervisor_hosts host it runs in (None: this machine as it is)."""
    name: str
    swapd: Swapd
    config: str
    compute: service_procs.Process = None
    hypervisor: object = None


class TwoHosts:
    """The consumer and donor hosts and the scheduler; see the module."""

    def __init__(self, root, mysql_db, rabbit_url, overrides=None,
                 fabric_provider=None):
        """``fabric_provider``: the swapds' libfabric provider (the donor
        lends over the rdma transport); None: TCP."""
        run = uuid.uuid4().hex[:10]
        self.root = root
        self.fabric_provider = fabric_provider
        self.rabbit_url = rabbit_url
        self.exchange = 'memagg_test_%s' % run
        self.scheduler_topic = 'memagg-scheduler-%s' % run
        self.common = {
            'DEFAULT': {'transport_url': rabbit_url,
                        'control_exchange': self.exchange,
                        'rpc_response_timeout': RPC_TIMEOUT,
                        'report_interval': 1},
            'database': {'connection': mysql_db},
            'scheduler': {'topic': self.scheduler_topic,
                          'report_topic': 'memagg-reports-%s' % run},
            # A 256 MiB guest may get all of its booked size as remote
            # swap (the default cap, half, is too little to swap 100 MiB
            # with room to spare); the donor lends all it has.
            'reservoir': {'slab_size_mb': 64, 'donor_reserve_mb': 0,
                          'max_remote_ratio': 1.0, 'prepare_timeout': 30},
        }
        overrides = overrides or {}
        consumer_swapd = Swapd('consumer', root, capacity_mb=0,
                               socket_user=QEMU_USER,
                               fabric_provider=fabric_provider)
        donor_swapd = Swapd('donor', root, capacity_mb=DONOR_CAPACITY_MB,
                            fabric_provider=fabric_provider)
        self.consumer = Host('consumer-%s' % run, consumer_swapd,
                             os.path.join(root, 'consumer.conf'))
        self.donor = Host('donor-%s' % run, donor_swapd,
                          os.path.join(root, 'donor.conf'))
        self._write(self.consumer, guest_fixtures.URI,
                    overrides.get('consumer', {}))
        # The donor's test-driver host: all of its memory free to lend.
        self._write(self.donor, 'test:///default', self._merge(
            {'compute': {'reserved_host_memory_mb': 0}},
            overrides.get('donor', {})))
        self.scheduler_config = service_procs.write_config(
            os.path.join(root, 'scheduler.conf'),
            self._merge(self.common, overrides.get('scheduler', {})))
        self.scheduler = None

    @staticmethod
    def _merge(base, extra):
        merged = {section: dict(options) for section, options in base.items()}
        for section, options in extra.items():
            merged.setdefault(section, {}).update(options)
        return merged

    def _write(self, host, libvirt_uri, extra):
        swapd = host.swapd
        sections = self._merge(self.common, {
            'DEFAULT': {'host': host.name},
            'compute': {'libvirt_uri': libvirt_uri, 'collect_interval': 2,
                        'balloon_stats_period': 2},
            'swapd': {'enabled': True,
                      'control_socket': swapd.control,
                      'export_dir': swapd.export_dir,
                      'state_dir': swapd.state_dir,
                      'listen': swapd.endpoint,
                      'capacity_mb': swapd.capacity_mb,
                      'retry_interval': 5},
        })
        service_procs.write_config(host.config,
                                   self._merge(sections, extra))

    def hosts(self):
        """The memagg hosts: the consumers, then the donor."""
        return [self.consumer, self.donor]

    def start(self):
        """Start the swapds, the scheduler and the computes; wait until
        each answers."""
        for host in self.hosts():
            host.swapd.start()
        self.scheduler = service_procs.Process(
            'memagg-scheduler', ['--config-file', self.scheduler_config],
            os.path.join(self.root, 'memagg-scheduler.log'))
        for host in self.hosts():
            host.compute = self._compute(host)
        self._wait_answering(self.hosts())
        return self

    def _compute(self, host):
        """``host``'s memagg-compute, started."""
        return service_procs.Process(
            'memagg-compute', ['--config-file', host.config],
            os.path.join(self.root, '%s-compute.log' % host.name))

    def restart_compute(self, host):
        """Stop ``host``'s memagg-compute (SIGTERM) and start it again;
        wait until it answers. Its exit code."""
        code = host.compute.stop()
        host.compute = self._compute(host)
        self._wait_answering([host])
        return code

    def _wait_answering(self, hosts):
        """Wait until the memagg-compute of each of ``hosts`` and the
        scheduler answer."""
        ctxt = context.get_admin_context()
        compute = compute_rpcapi.ComputeAPI()
        for host in hosts:
            polling.wait_for(
                lambda: self._answer(host.compute, compute.ping, ctxt,
                                     host.name), 90,
                interval=0.5, message='memagg-compute of %s' % host.name)
        polling.wait_for(
            lambda: self._answer(self.scheduler,
                                 scheduler_rpcapi.SchedulerAPI().ping, ctxt),
            90, interval=0.5, message='memagg-scheduler answering')

    @staticmethod
    def _answer(proc, func, *args):
        assert proc.alive(), '%s exited; log:\n%s' % (proc.name, proc.log())
        try:
            return func(*args, timeout=2)
        except exceptions.RPCTimeout:
            return None

    def processes(self):
        procs = [self.scheduler] + [host.compute for host in self.hosts()]
        return [p for p in procs if p is not None]

    def logs(self):
        """Every daemon's log, for a failure's message (tails)."""
        out = []
        for proc in self.processes():
            out.append('--- %s (%s)\n%s' % (proc.name, proc.log_path,
                                            proc.log()[-8000:]))
        for host in self.hosts():
            out.append('--- memagg-swapd of %s\n%s'
                       % (host.name, host.swapd.log()[-6000:]))
        return '\n'.join(out)

    def stop(self):
        """Stop the computes (they call the others), the scheduler, then
        the swapds; [(name, exit code)] of those that did not stop
        cleanly."""
        hosts = self.hosts()
        bad = []
        for proc in [h.compute for h in hosts] + [self.scheduler]:
            if proc is None:
                continue
            try:
                code = proc.stop()
            except AssertionError as exc:
                code = str(exc)
            if code != 0:
                bad.append((proc.name, code))
        for host in hosts:
            code = host.swapd.stop()
            if code not in (0, None):
                bad.append(('memagg-swapd of %s' % host.name, code))
        return bad


@contextlib.contextmanager
def running(conf, hosts):
    """``hosts`` (a TwoHosts) started, this test process an RPC client of
    them; stopped however the block ends, every daemon's log printed
    (pytest shows it with a failure). A daemon that did not stop cleanly
    fails the block."""
    guest_fixtures.ensure_libvirtd()
    rpc.cleanup()
    conf.config(control_exchange=hosts.exchange,
                rpc_response_timeout=RPC_TIMEOUT)
    conf.config(topic=hosts.scheduler_topic, group='scheduler')
    rpc.init(url=hosts.rabbit_url)
    try:
        yield hosts.start()
    finally:
        rpc.cleanup()
        bad = hosts.stop()
        print(hosts.logs())
    assert not bad, 'daemons that did not stop cleanly: %s\n%s' % (
        bad, hosts.logs())


@pytest.fixture
def two_hosts_root(qemu_workdir):
    """A directory for the hosts' sockets and state that QEMU's user can
    walk through; removed afterwards."""
    pwd.getpwnam(QEMU_USER)  # KeyError: libvirt is not installed
    return qemu_workdir


@pytest.fixture
def two_hosts_overrides():
    """Extra options per role ('consumer', 'donor', 'scheduler'):
    ``{role: {section: {option: value}}}``; tests override this fixture."""
    return {}


@pytest.fixture
def two_hosts_provider():
    """The swapds' libfabric provider (the donor lends over the rdma
    transport); None: TCP. Tests parametrize it."""
    return None


@pytest.fixture
def two_hosts(conf, mysql_db, rabbit_url, two_hosts_root,
              two_hosts_overrides, two_hosts_provider):
    """The two hosts and the scheduler running (see the module); this test
    process is an RPC client of them. Yields the TwoHosts."""
    with running(conf, TwoHosts(two_hosts_root, mysql_db, rabbit_url,
                                two_hosts_overrides,
                                two_hosts_provider)) as hosts:
        yield hosts
