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

"""Two hypervisor hosts on this one machine, between which real guests
live-migrate (TESTBED.md, "Two hypervisor hosts on one machine").

Host A is this machine's libvirtd (qemu:///system, started by
guest_fixtures.ensure_libvirtd()). Host B is a second libvirtd in a mount
namespace of its own (``unshare -m --propagation private``): a tmpfs on
/run (mode 0755, so QEMU's user walks to sockets there) and bind mounts
of its own /etc/libvirt, /var/lib/libvirt, /var/log/libvirt and
/var/cache/libvirt, copied from A's (definitions and state of A's domains
left out), with a virtlogd of its own (libvirt hands guest log and
console files to the virtlogd of its /run) and, in its libvirtd.conf,
``listen_tcp = 1``, ``listen_tls = 0``, ``auth_tcp = "none"``, a
``tcp_port`` of its own on loopback and a random ``host_uuid``. Both
daemons run as root and share the network namespace, the cgroup tree and
everything outside those four directories and /run. Each libvirtd runs
under the same subreaper (guest_fixtures.LIBVIRTD), so a QEMU that exits
at a migration's confirm step is reaped at once, as on a real host.

What libvirt checks: both hosts have the same hostname, and libvirt
refuses a migration only when the destination's host UUID equals the
source's ("Attempt to migrate guest to the same host"), so B's random
host_uuid is what lets guests move. Migration is peer to peer, as Nova
does it: the source libvirtd opens the destination's URI itself, and the
source QEMU sends memory straight to the destination QEMU at the migrate
URI tcp://127.0.0.1 (Nova's ``live_migration_inbound_addr``).

Host A as a destination (B to A): A's libvirtd runs without ``--listen``
and is shared by every real-guest test, so it is not restarted here; its
TCP listener is a forwarder in the test process from a loopback port to
its unix socket /run/libvirt/libvirt-sock. libvirt's RPC protocol is the
same over both, and A sees a root client, which is what auth_tcp = "none"
lets in over TCP.

Each host has its own /run, so per-host unix sockets (memagg-swapd's,
a guest's command port) live at the same path on both, separate, as on
real hosts. A process of host B (a memagg-swapd, a memagg-compute) runs
in B's namespace through ``nsenter -m -t PID`` (HostB.command, popen);
this process reaches B's files through /proc/PID/root (HostB.path).

The ``hypervisors`` fixture (module scope) gives two hosts of the second
kind, 'host-a' and 'host-b', so that its tests touch no libvirtd but their
own (the host lane's tests restart this machine's) and no compute loop of
another test manages their guests; the migration benchmark pairs host A,
this machine's libvirtd, with a host B. started() stops a host B however
the tests end: B's domains destroyed,
SIGTERM then SIGKILL to libvirtd and virtlogd, any process still seeing
B's /run killed (the namespace and its mounts go with the last one), B's
directory removed; it prints B's logs, which pytest shows with a failure.
"""
import contextlib
import dataclasses
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
import uuid
import xml.etree.ElementTree as ElementTree

import libvirt
import pytest

from memagg.drivers.hypervisor import libvirt_driver
from memagg.tests.functional import guest_fixtures
from memagg.tests.functional import service_procs
from memagg.demo import guest as vm
from memagg.tests import polling

LOOPBACK = '127.0.0.1'
# A's libvirtd: the unix socket its TCP forwarder relays to.
HOST_A_SOCKET = '/run/libvirt/libvirt-sock'
# What host B has of its own: mount point -> directory under B's root.
PRIVATE_DIRS = {'/etc/libvirt': 'etc', '/var/lib/libvirt': 'lib',
                '/var/log/libvirt': 'log', '/var/cache/libvirt': 'cache'}
VIRTLOGD_SOCKET = '/run/libvirt/virtlogd-sock'
START_TIMEOUT = 60
STOP_TIMEOUT = 30
# Where a guest's per-host files (its command socket) go, under each
# host's /run.
GUEST_RUN_DIR = '/run/memagg-test-guests'

#: Each host B's QEMUs take incoming migrations on a range of ports of its
#: own, above libvirt's default range (this machine's libvirtd's, 49152 to
#: 49215): host Bs share the network namespace, and each libvirtd's port
#: allocator sees only its own migrations, so two migrating at once (one
#: in each lane) could both pick a port only one QEMU can bind. A range a
#: slot: four slots per test process (its host Bs alive at once), the host
#: lane's process first, then each xdist worker's.
MIGRATION_PORTS = 49216
MIGRATION_PORTS_PER_HOST = 16
SLOTS_PER_PROCESS = 4
_slots_taken = set()


def _process_index():
    worker = os.environ.get('PYTEST_XDIST_WORKER', '')
    return int(worker[2:]) + 1 if worker.startswith('gw') else 0


@dataclasses.dataclass
class Hypervisor:
    """One hypervisor host as its nova-compute and its peers see it:
    ``name`` (Nova's host name), ``uri`` (libvirt, from this process),
    ``port`` (its libvirtd's TCP port on ``address``, which is also its
    ``live_migration_inbound_addr``)."""

    name: str
    uri: str
    port: int
    address: str = LOOPBACK

    @property
    def peer_uri(self):
        """The URI a source libvirtd opens to migrate a guest here (Nova's
        ``live_migration_uri``, with this host's port)."""
        return 'qemu+tcp://%s:%d/system' % (self.address, self.port)

    def connect(self):
        return libvirt.open(self.uri)

    def path(self, path):
        """Where this process reaches ``path`` of the host's file system."""
        return path

    def makedirs(self, path, mode=0o755):
        """Create ``path`` (and parents) on the host with ``mode``."""
        local = self.path(path)
        os.makedirs(local, exist_ok=True)
        os.chmod(local, mode)

    def qemu_rss(self, name):
        """Resident bytes of the QEMU process of domain ``name`` here."""
        with open(self.path('/run/libvirt/qemu/%s.pid' % name)) as f:
            pid = int(f.read())
        with open('/proc/%d/status' % pid) as f:
            for line in f:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1]) * 1024
        raise AssertionError('no VmRSS for QEMU %d' % pid)


class HostA(Hypervisor):
    """This machine's libvirtd, reachable by peers over a TCP forwarder
    (from construction to stop())."""

    def __init__(self, name):
        uri = guest_fixtures.ensure_libvirtd()
        port = service_procs.free_port()
        self._forwarder = service_procs.TcpForwarder(port, HOST_A_SOCKET)
        super().__init__(name, uri, port)

    def start(self):
        """Nothing to start: the libvirtd is the machine's, the forwarder
        runs already."""
        return self

    def logs(self):
        """None of the test's: the machine's libvirtd logs as it does."""
        return ''

    def stop(self):
        """Stop the forwarder; nothing of A's can be left behind ([])."""
        self._forwarder.stop()
        return []


class HostB(Hypervisor):
    """A second libvirtd in its own mount namespace; see the module."""

    def __init__(self, name, root=None):
        self.root = root or tempfile.mkdtemp(prefix='memagg-hostb-',
                                             dir='/var/tmp')
        os.chmod(self.root, 0o755)
        port = service_procs.free_port()
        super().__init__(name, 'qemu+tcp://%s:%d/system' % (LOOPBACK, port),
                         port)
        self.host_uuid = str(uuid.uuid4())
        self._slot = min(set(range(SLOTS_PER_PROCESS)) - _slots_taken)
        _slots_taken.add(self._slot)
        first = MIGRATION_PORTS + MIGRATION_PORTS_PER_HOST * (
            _process_index() * SLOTS_PER_PROCESS + self._slot)
        self.migration_ports = (first, first + MIGRATION_PORTS_PER_HOST - 1)
        self.log_path = os.path.join(self.root, 'libvirtd.log')
        self.virtlogd_log_path = os.path.join(self.root, 'virtlogd.log')
        self.virtlogd = None
        self.libvirtd = None
        self._run_dev = None
        self._logs = []

    # -- the host's file system, from here and from inside

    @property
    def pid(self):
        """A process in B's mount namespace (its virtlogd, which made
        it)."""
        return self.virtlogd.pid

    def path(self, path):
        return '/proc/%d/root%s' % (self.pid, path)

    def command(self, argv):
        """``argv`` run in host B's mount namespace."""
        return ['nsenter', '-m', '-t', str(self.pid), '--'] + list(argv)

    def popen(self, argv, **kwargs):
        """subprocess.Popen of ``argv`` in host B's mount namespace."""
        return subprocess.Popen(self.command(argv), **kwargs)

    # -- start and stop

    def _copy_libvirt_dirs(self):
        for source, name in PRIVATE_DIRS.items():
            target = os.path.join(self.root, name)
            if name in ('lib', 'log'):
                _copy_dirs(source, target)
            else:
                subprocess.run(['cp', '-a', source, target], check=True)
        etc = os.path.join(self.root, 'etc')
        # A's domain, network, pool and secret definitions stay A's.
        for name in ('qemu', 'storage', 'secrets'):
            path = os.path.join(etc, name)
            if os.path.isdir(path):
                shutil.rmtree(path)
        os.makedirs(os.path.join(etc, 'qemu'))
        conf = os.path.join(etc, 'libvirtd.conf')
        settings = {'listen_tcp': '1', 'listen_tls': '0',
                    'auth_tcp': '"none"', 'tcp_port': '"%d"' % self.port,
                    'listen_addr': '"%s"' % self.address,
                    'host_uuid': '"%s"' % self.host_uuid}
        with open(conf) as f:
            kept = [line for line in f
                    if line.split('=')[0].strip() not in settings]
        with open(conf, 'w') as f:
            f.writelines(kept)
            f.writelines('%s = %s\n' % item for item in settings.items())
        with open(os.path.join(etc, 'qemu.conf'), 'a') as f:
            f.write('migration_port_min = %d\nmigration_port_max = %d\n'
                    % self.migration_ports)

    def start(self):
        """Start virtlogd (making the namespace) and libvirtd; wait until
        libvirtd answers at ``uri``."""
        self._copy_libvirt_dirs()
        mounts = ['set -e',
                  'mount -t tmpfs -o mode=0755 memagg-hostb-run /run']
        mounts += ['mount --bind %s %s' % (
            shlex.quote(os.path.join(self.root, name)), shlex.quote(point))
            for point, name in PRIVATE_DIRS.items()]
        mounts.append('exec virtlogd')
        self.virtlogd = self._spawn(
            ['unshare', '-m', '--propagation', 'private', '--',
             'sh', '-c', '\n'.join(mounts)], self.virtlogd_log_path)
        # Once the shell has become virtlogd, B's mounts are in place.
        polling.wait_for(lambda: self._alive(self.virtlogd)
                         and _comm(self.pid) == 'virtlogd'
                         and os.path.exists(self.path(VIRTLOGD_SOCKET)),
                         START_TIMEOUT, interval=0.1,
                         message='host B\'s virtlogd socket')
        self._run_dev = os.stat(self.path('/run')).st_dev
        assert self._run_dev != os.stat('/run').st_dev
        self.libvirtd = self._spawn(
            self.command(guest_fixtures.LIBVIRTD + ['--listen']),
            self.log_path)
        polling.wait_for(lambda: self._alive(self.libvirtd)
                         and libvirt_driver.answers(self.uri),
                         START_TIMEOUT, interval=0.2,
                         message='host B\'s libvirtd answering at %s'
                         % self.uri)
        return self

    def _spawn(self, argv, log_path):
        log = open(log_path, 'ab')
        self._logs.append(log)
        return subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)

    def _alive(self, proc):
        assert proc.poll() is None, (
            'host B: %s exited with %s\n%s' % (
                proc.args[-1], proc.returncode, self.logs()))
        return True

    def logs(self):
        """libvirtd's, virtlogd's and B's QEMU logs, for a failure."""
        out = []
        qemu_logs = os.path.join(self.root, 'log', 'qemu')
        paths = [self.log_path, self.virtlogd_log_path] + sorted(
            os.path.join(qemu_logs, name) for name in (
                os.listdir(qemu_logs) if os.path.isdir(qemu_logs) else ()))
        for path in paths:
            try:
                with open(path, errors='replace') as f:
                    out.append('--- %s\n%s' % (path, f.read()[-20000:]))
            except FileNotFoundError:
                pass
        return '\n'.join(out)

    def processes(self):
        """PIDs of the processes that see B's /run (its daemons, QEMUs in
        their own namespaces cloned from B's, anything started with
        command())."""
        found = []
        for entry in os.listdir('/proc'):
            if not entry.isdigit():
                continue
            try:
                if os.stat('/proc/%s/root/run' % entry).st_dev == \
                        self._run_dev:
                    found.append(int(entry))
            except OSError:
                continue  # gone, or a kernel thread
        return found

    def stop(self):
        """Stop everything of host B and remove its directory; a list of
        what did not go cleanly (empty when all did)."""
        problems = []
        if self.libvirtd is not None and self.libvirtd.poll() is None:
            try:
                conn = libvirt.open(self.uri)
                try:
                    for dom in conn.listAllDomains():
                        problems.append('domain %s left on host B'
                                        % dom.name())
                        if dom.isActive():
                            dom.destroy()
                        if dom.isPersistent():
                            dom.undefine()
                finally:
                    conn.close()
            except libvirt.libvirtError as exc:
                problems.append('host B\'s domains: %s' % exc)
        for proc in (self.libvirtd, self.virtlogd):
            if proc is not None:
                problem = _terminate(proc)
                if problem:
                    problems.append(problem)
        if self._run_dev is not None:
            leftovers = self.processes()
            for pid in leftovers:
                problems.append('process %d left in host B: %s'
                                % (pid, _cmdline(pid)))
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            polling.wait_for(lambda: not self.processes(), STOP_TIMEOUT,
                             message='host B\'s processes gone')
        for log in self._logs:
            log.close()
        shutil.rmtree(self.root, ignore_errors=True)
        _slots_taken.discard(self._slot)
        return problems


def _copy_dirs(source, target):
    """The directory tree of ``source`` (owners and modes) without its
    files, and without the directories of running domains."""
    for path, dirs, _ in os.walk(source):
        dirs[:] = [d for d in dirs if not d.startswith('domain-')]
        dest = os.path.join(target, os.path.relpath(path, source))
        os.makedirs(dest, exist_ok=True)
        st = os.stat(path)
        os.chown(dest, st.st_uid, st.st_gid)
        os.chmod(dest, st.st_mode & 0o7777)


def _terminate(proc):
    """SIGTERM, then SIGKILL after STOP_TIMEOUT s; a problem or None."""
    if proc.poll() is not None:
        return '%s had exited with %s' % (proc.args[-1], proc.returncode)
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return '%s ignored SIGTERM for %d s' % (proc.args[-1], STOP_TIMEOUT)
    return None


def _comm(pid):
    try:
        with open('/proc/%d/comm' % pid) as f:
            return f.read().strip()
    except OSError:
        return None


def _cmdline(pid):
    try:
        with open('/proc/%d/cmdline' % pid, 'rb') as f:
            return f.read().replace(b'\0', b' ').decode(errors='replace')
    except OSError:
        return '?'


@dataclasses.dataclass
class Hosts:
    """Host A and host B of the ``hypervisors`` fixture."""

    a: HostA
    b: HostB

    @property
    def by_name(self):
        return {self.a.name: self.a, self.b.name: self.b}


@contextlib.contextmanager
def started(a, b):
    """Hosts(``a``, ``b``) started; both stopped however the block ends
    and their logs printed (pytest shows them with a failure). What
    stopping them left behind fails the block."""
    if shutil.which('unshare') is None or shutil.which('nsenter') is None:
        pytest.fail('util-linux\'s unshare and nsenter are needed')
    problems = []
    try:
        for host in (a, b):
            host.start()
        yield Hosts(a, b)
    finally:
        for host in (b, a):
            print(host.logs())
            problems += host.stop()
    assert problems == [], problems


@pytest.fixture(scope='module', name='hypervisors')
def hypervisors_fixture():
    """Hosts 'host-a' and 'host-b', each a libvirtd in a mount namespace of
    its own (HostB), reachable as each other's migration peers; everything
    of both stopped and removed afterwards."""
    guest_fixtures.ensure_libvirtd()
    with started(HostB('host-a'), HostB('host-b')) as hosts:
        yield hosts


class MigratableGuest(vm.Guest):
    """memagg's test guest, persistent as Nova's are, made to live-migrate
    between the hosts of this machine:

    * its console file, shared by both hosts' virtlogd, is appended to
      (``append='on'``): a destination opening it would truncate it;
    * its command port is a unix socket under /run, a path of each host:
      a source QEMU removes its socket's path when it exits, which on a
      shared path would take the destination's with it. Each host needs
      the directory (prepare()); follow() points the test at the host the
      guest runs on.
    """

    def __init__(self, conn, workdir, name, **kwargs):
        super().__init__(conn, workdir, name, **kwargs)
        self.run_dir = os.path.join(GUEST_RUN_DIR, name)
        self.command_path = os.path.join(self.run_dir, 'command.sock')
        tree = ElementTree.fromstring(self.xml)
        for serial in tree.findall('./devices/serial'):
            source = serial.find('source')
            if serial.get('type') == 'file':
                source.set('append', 'on')
            elif serial.get('type') == 'unix':
                source.set('path', self.command_path)
        self.xml = ElementTree.tostring(tree, encoding='unicode')
        self.command = self.command_path

    def prepare(self, host):
        """Make the guest's /run directory on ``host`` (QEMU, as its
        unprivileged user, binds the command socket there)."""
        host.makedirs(GUEST_RUN_DIR, 0o755)
        host.makedirs(self.run_dir, 0o777)

    def define_and_start(self, timeout=120):
        """Define the domain and boot it (as Nova does); wait for READY."""
        self.dom = self.conn.defineXML(self.xml)
        self.dom.create()
        self.wait_console(r'MEMAGG READY', timeout)
        return self

    def follow(self, host):
        """The guest now runs on ``host``: send commands there."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        self.command = host.path(self.command_path)

    def remove(self, hosts):
        """Destroy and undefine the domain wherever it is; remove its /run
        directories."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        for host in hosts:
            try:
                conn = host.connect()
            except libvirt.libvirtError:
                continue  # host gone: nothing of the guest is left there
            try:
                dom = conn.lookupByUUIDString(self.uuid)
                if dom.isActive():
                    dom.destroy()
                if dom.isPersistent():
                    dom.undefine()
            except libvirt.libvirtError:
                pass  # not on this host
            finally:
                conn.close()
            # Not there, or host B (and its /run) already gone.
            shutil.rmtree(host.path(self.run_dir), ignore_errors=True)
            try:
                os.rmdir(host.path(GUEST_RUN_DIR))
            except OSError:
                pass  # another guest's directory is there, or it is gone
        self.dom = None


@contextlib.contextmanager
def booted_guest(hosts, workdir, name, memory_mb, prepared_on):
    """A MigratableGuest ``name`` booted on host A of ``hosts`` (backed by
    anonymous memory: Nova's destination XML drops a memfd source), with
    its /run directory on each host of ``prepared_on``. Afterwards its
    console's tail is printed (pytest shows it with a failure) and it is
    removed from both hosts."""
    conn = hosts.a.connect()
    guest = MigratableGuest(conn, workdir, name, memory_mb=memory_mb,
                            memfd=False)
    try:
        for host in prepared_on:
            guest.prepare(host)
        guest.define_and_start()
        guest.follow(hosts.a)
        yield guest
    finally:
        print('guest console (tail):\n%s' % guest.console_text()[-3000:])
        guest.remove([hosts.a, hosts.b])
        conn.close()
