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

"""Live migration of a VM with remote memory (ALGORITHMS.md section 5)
against the same VM without memagg: bytes moved and time per case.

One run, two real hypervisor hosts on this machine
(memagg.tests.functional.hypervisor_hosts: host A is this libvirtd, host B
a second libvirtd in a mount namespace of its own), the same TCG test
guest (--guest-mb booked, anonymous memory) with the same --data-mb of
random data written in it (the guest's ``fill``) in every case, each case
a freshly booked guest moved from host B to host A by
memagg.tests.functional.nova_libvirt's LiveMigrator, the migrateToURI3 call
Nova's libvirt driver computes with its default [libvirt] options. Guests
start on host B, this benchmark's own libvirtd, so that nothing else on
the machine (the memagg-compute of a test running meanwhile balloons every
guest of host A's libvirtd) changes them while they are measured.
Cases:

- ``memagg-N``: a remote-swap disk as memagg gives one: a donor
  memagg-swapd lends the slabs over loopback TCP (GRANT_ALLOC), host B's
  memagg-swapd serves the export (EXPORT_CREATE), hot-plugged into the
  guest (live and persistent), which swaps on it. The guest's balloon is
  squeezed (setMemoryFlags, live) so that about N % of its memory goes to
  the remote disk. Before Nova's call, host A's memagg-swapd adopts the
  slab table (EXPORT_CREATE adopt=1, same export socket path under each
  host's /run): the remote pages never cross the wire. Time: the adoption
  plus the migrate call. Once the guest runs on host A, A's memagg-swapd
  rebuilds its durability copy from the donor in the background
  (EXPORT_REBUILD, as memagg-scheduler's finish step asks), untimed but
  shown (``rebuilds``); the next move waits until it is done, as
  memagg-scheduler follows it to the end. Moved back at once, the guest
  would leave a host whose rebuild still read the donor and wrote the
  copy: on this 2-core machine that took the migration's CPU (the first
  4 s of a move at 4-17 MiB/s instead of 112, measured), a cost of the
  previous move's background work, not of the move.
- ``peer-a``: the same VM with all its memory local: no swap disk, no
  squeeze.
- ``peer-b``: the same VM with its swap on a local raw file (under
  /var/lib/libvirt/images, a directory of each host's own), squeezed to the
  share of the middle memagg case (50 %). Nova must block-migrate it:
  Nova's block-migration flags (VIR_MIGRATE_NON_SHARED_INC, from
  ``_parse_migration_flags``), ``migrate_disks`` naming the local disk as
  ``_live_migration_copy_disk_paths`` gives, the destination's file
  created empty of the same size beforehand (``pre_live_migration``).
  Time: creating that file plus the migrate call.

Each guest moves --repeat times, there and back again (B to A, A to B,
...), prepared each time as above; bytes are those of the first move, the
time the median of all (one slow start of the destination's QEMU left
out). Every guest moves paused (suspended on host B, resumed where it
ends): QEMU 7.2's TCG now and then corrupts a guest that writes while its
memory is copied (see test_live_migration_hosts), the same for every case
so the comparison stays fair. After its last migration the guest checksums its
data again (reading its swap back: through the adopted export and its
copy rebuilt from the donors for memagg, from the copied file for
peer-b); a mismatch fails the run.

Bytes moved: libvirt's completed job statistics, ``data_processed``
(memory; a zero page costs a few bytes), plus for peer-b the disk copy:
``disk_processed`` where libvirt's completed job has it, otherwise what
the copy allocated in the destination's (sparse) file.
Remote share: the guest's swap in use over that plus its used memory
(MemTotal - MemFree), from its last heartbeat before the pause; for
memagg, what host B's memagg-swapd stores for the export is shown too.

Targets: at the 50 % share, at most 0.6x the bytes and the time of peer-a
and less than peer-b's; the time at the highest share within 1.5x of the
time at 0 %. Prints a table, the ratios and a verdict per target; exits
non-zero only when something failed to run, never on the figures.

Why a 1 GiB guest over a 1 Gbit/s migration network by default: every
migration here pays about 0.5 s that do not depend on the memory moved
(libvirt's handshake and starting the destination's QEMU, 0.35 s in
libvirt's log; the source's confirm step), the same in every case. Over
this machine's loopback, at memory speed, a 256 MiB guest's copy takes
less than that, and the time ratios say more about QEMU's start than
about what moved; with the copy at a network's speed they converge to the
byte ratios, as for the VMs of a cloud. ``--guest-mb 256 --bandwidth 0``
shows the small case. The libvirtds run under a subreaper
(guest_fixtures.LIBVIRTD): this machine's PID 1 reaps an exited QEMU only
about 2 s later, and libvirt's confirm step waits for that, which added
1.8 s to every case here that no host with systemd pays.

Run as root (libvirtd, a mount namespace): .venv/bin/python
benchmarks/migration.py [--guest-mb 1024] [--data-mb 640]
[--bandwidth 112] [--shares 0 25 50 75] [--repeat 3] [--no-check]
[--quick]
"""
import argparse
import os
import secrets
import shutil
import sys
import tempfile
import time
import uuid
import xml.etree.ElementTree as ElementTree

import libvirt

from memagg.cmd import swapd as swapd_cmd
from memagg.drivers.hypervisor import libvirt_driver
from memagg.tests.functional import hypervisor_hosts
from memagg.tests.functional import nova_libvirt
from memagg.tests.functional import two_hosts
from memagg.tests import polling

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _migration_cases as measure  # noqa: E402

MIB = measure.MIB
SLAB_SIZE = 64 * MIB
MIGRATION_TIMEOUT = 600
BOOT_TIMEOUT = 180
# Squeezed guests swap in TCG: minutes for a few hundred MiB.
SETTLE_TIMEOUT = 300
# A rebuild reads the whole export from the donor over loopback.
REBUILD_TIMEOUT = 300
# Where each host keeps its guests' local disks: a directory of its own
# (hypervisor_hosts gives host B its own /var/lib/libvirt), as Nova's
# instances_path on hosts without shared storage.
DISK_DIR = '/var/lib/libvirt/images/memagg-bench-migration-%d' % os.getpid()
LOCAL_DISK_XML = """<disk type='file' device='disk'>
      <driver name='qemu' type='raw' cache='none'/>
      <source file='%s'/>
      <target dev='vda' bus='virtio'/>
    </disk>"""


class RunError(Exception):
    """A case could not run."""


# -- memagg-swapd on each host

class HostSwapd(two_hosts.Swapd):
    """A memagg-swapd of ``host`` (its mount namespace for host B) whose
    exports are in ``export_dir``, a path under each host's own /run;
    control socket and state in ``root``, which both hosts share."""

    def __init__(self, name, root, host, export_dir, capacity_mb=0):
        super().__init__(name, root, capacity_mb=capacity_mb,
                         socket_user=two_hosts.QEMU_USER)
        self.host = host
        self.export_dir = export_dir
        swapd_cmd.write_config(self.config_file, {
            'control_socket': self.control, 'export_dir': export_dir,
            'state_dir': self.state_dir, 'listen': self.endpoint,
            'capacity_mb': capacity_mb, 'transport': 'tcp',
            'socket_user': two_hosts.QEMU_USER})

    def argv(self):
        argv = super().argv()
        if isinstance(self.host, hypervisor_hosts.HostB):
            return self.host.command(argv)
        return argv


class Bench:
    """Both hosts, the swapds, the migrator; runs the cases."""

    def __init__(self, args, workdir):
        self.args = args
        self.workdir = workdir
        self.a = hypervisor_hosts.HostA('host-a')
        self.b = hypervisor_hosts.HostB('host-b')
        # Guests start on host B, a libvirtd of this benchmark's own:
        # nothing else on the machine balloons them while they are
        # measured.
        self.src, self.dst = self.b, self.a
        self.export_dir = '/run/memagg-bench-migration-%d' % os.getpid()
        self.swapds = []
        self.migrator = None

    def start(self):
        self.b.start()
        for host in (self.a, self.b):
            host.makedirs(self.export_dir, 0o755)
            host.makedirs(DISK_DIR, 0o755)
        root = os.path.join(self.workdir, 'swapd')
        os.makedirs(root, mode=0o755)
        self.donor = HostSwapd('donor', root, self.a, self.export_dir,
                               capacity_mb=2 * self.args.disk_mb)
        self.swapd_src = HostSwapd('src', root, self.src, self.export_dir)
        self.swapd_dst = HostSwapd('dst', root, self.dst, self.export_dir)
        for daemon in (self.donor, self.swapd_src, self.swapd_dst):
            self.swapds.append(daemon)
            daemon.start()
        # Nova's [libvirt] live_migration_bandwidth (MiB/s, 0: no limit):
        # the migration network's speed, for the memory and for a block
        # migration's disk mirror alike.
        self.migrator = nova_libvirt.LiveMigrator(
            {self.a.name: self.a, self.b.name: self.b},
            {'live_migration_bandwidth': self.args.bandwidth})

    def stop(self):
        problems = []
        if self.migrator is not None:
            self.migrator.close()
        for daemon in self.swapds:
            code = daemon.stop()
            if code not in (0, None):
                problems.append('memagg-swapd %s: %s' % (daemon.name, code))
        problems += self.b.stop()
        self.a.stop()
        shutil.rmtree(DISK_DIR, ignore_errors=True)
        shutil.rmtree(self.export_dir, ignore_errors=True)
        return problems

    # -- the steps of a case

    def _guest(self, case):
        conn = self.src.connect()
        guest = hypervisor_hosts.MigratableGuest(
            conn, self.workdir, 'memagg-bench-mig-%d-%s' % (os.getpid(),
                                                            case.name),
            memory_mb=self.args.guest_mb, memfd=False)
        guest.local_conn = conn
        if case.swap == 'local':
            path = os.path.join(DISK_DIR, '%s-swap.img' % guest.name)
            _sparse_file(self.src.path(path), self.args.disk_mb * MIB)
            tree = ElementTree.fromstring(guest.xml)
            tree.find('./devices').insert(
                0, ElementTree.fromstring(LOCAL_DISK_XML % path))
            guest.xml = ElementTree.tostring(tree, encoding='unicode')
            guest.disk_path = path
        for host in (self.a, self.b):
            guest.prepare(host)
        guest.follow(self.src)
        return guest

    def _memagg_disk(self, guest, case):
        """Grant, export, hot-plug; the guest's swap device."""
        case.grant = str(uuid.uuid4())
        case.key = secrets.token_hex(32)
        slabs = self.args.disk_mb * MIB // SLAB_SIZE
        lent = self.donor.client().grant_alloc(case.grant, case.key,
                                               SLAB_SIZE, range(slabs))
        if len(lent['slabs']) != slabs:
            raise RunError('the donor lent %d of %d slabs'
                           % (len(lent['slabs']), slabs))
        case.table = [{'index': s['index'], 'endpoint': lent['endpoint'],
                       'remote_addr': s['remote_addr'], 'rkey': lent['rkey']}
                      for s in lent['slabs']]
        export = self.swapd_src.client().export_create(
            case.grant, case.key, self.args.disk_mb * MIB, SLAB_SIZE,
            self.swapd_src.local_copy('%s.img' % case.grant),
            case.table)
        serial = 'memagg-swap-' + case.grant.replace('-', '')[:8]
        mark = len(guest.console_text())
        guest.dom.attachDeviceFlags(
            libvirt_driver.swap_disk_xml(export['socket'], export['name'],
                                         serial, 'vdb'),
            libvirt.VIR_DOMAIN_AFFECT_LIVE | libvirt.VIR_DOMAIN_AFFECT_CONFIG)
        return guest.wait_swap_disk(serial, 60, after=mark)

    def _beat_after(self, guest, n):
        """The guest's first whole heartbeat numbered above ``n``.
        heartbeats() counts a line as soon as it starts, heartbeat()
        parses whole lines only: asked one after the other, they once
        gave the heartbeat before the fill, and the squeeze that followed
        left the guest too little memory for its data."""
        def whole():
            beat = guest.heartbeat()
            return beat if beat is not None and beat['n'] > n else None
        return polling.wait_for(whole, 30, interval=0.2,
                                message='a heartbeat of %s' % guest.name)

    def _squeeze(self, guest, case, dev):
        """Balloon the guest so that about ``case.share`` of its memory
        goes to its swap disk; wait until the balloon is there and the
        swap settled."""
        beat = self._beat_after(guest, guest.heartbeats())
        if not case.share:
            return None
        want_kb = case.share * (beat['total_kb'] - beat['free_kb'])
        current = guest.dom.info()[2]
        target = int(current - beat['free_kb'] - want_kb)
        guest.dom.setMemoryFlags(target, libvirt.VIR_DOMAIN_AFFECT_LIVE)

        def ballooned():
            return guest.dom.memoryStats().get('actual', current) \
                <= target + 1024
        polling.wait_for(ballooned, SETTLE_TIMEOUT, interval=0.5,
                         message='%s ballooned to %d KiB'
                         % (guest.name, target))
        last = [None]

        def settled():
            beat = self._beat_after(guest, guest.heartbeats())
            used = beat['swaps'].get(dev, {}).get('used_kb', 0)
            calm = last[0] is not None and abs(used - last[0]) < 2048
            last[0] = used
            return calm
        polling.wait_for(settled, SETTLE_TIMEOUT, interval=0.1,
                         message='%s\'s swap settled' % guest.name)
        return target

    def _migrate(self, case, guest, src, swapd_src, dst, swapd_dst):
        """Prepare ``dst`` as Nova and memagg would and move the paused
        guest there; (preparation seconds, MigrationResult)."""
        start = time.monotonic()
        if case.swap == 'memagg':
            described = swapd_src.client().export_describe(case.grant)
            swapd_dst.client().export_create(
                case.grant, case.key, described['size'],
                described['slab_size'],
                swapd_dst.local_copy('%s.img' % case.grant),
                described['slabs'], adopt=True)
        elif case.swap == 'local':
            # Nova's pre_live_migration: the disk, empty, on the
            # destination.
            _sparse_file(dst.path(guest.disk_path), self.args.disk_mb * MIB)
            self.migrator.nova.block[guest.uuid] = (['vda'],
                                                    [guest.disk_path])
        prepare_s = time.monotonic() - start
        result = self.migrator.migrate(guest.uuid, src.name, dst.name,
                                       MIGRATION_TIMEOUT)
        if result.status != nova_libvirt.COMPLETED:
            raise RunError('%s: migration %s -> %s %s: %s' % (
                case.name, src.name, dst.name, result.status, result.error))
        if case.swap == 'memagg':
            # memagg-scheduler's finish: the destination rebuilds its copy
            # (in the background, once the guest runs there), the source
            # drops its export.
            swapd_dst.client().export_rebuild(case.grant)
            swapd_src.client().export_drop(case.grant, delete=True)
            case.rebuilds.append(self._rebuilt(case, swapd_dst))
        return prepare_s, result

    def _rebuilt(self, case, swapd):
        """Seconds until ``swapd``'s durability copy of the case's export
        is rebuilt (the finish step's background work, untimed)."""
        start = time.monotonic()
        polling.wait_for(
            lambda: swapd.client().export_stats(case.grant)[
                'rebuild_left'] == 0,
            REBUILD_TIMEOUT, interval=0.1,
            message='%s: the local copy rebuilt on memagg-swapd %s'
                    % (case.name, swapd.name))
        return time.monotonic() - start

    def run_case(self, case):
        guest = self._guest(case)
        try:
            return self._run(case, guest)
        except (RunError, AssertionError, libvirt.libvirtError,
                OSError) as exc:
            raise RunError('%s\nguest console (tail):\n%s' % (
                exc, guest.console_text()[-2000:]))
        finally:
            guest.remove([self.a, self.b])
            guest.local_conn.close()
            if case.grant is not None:
                for daemon in (self.swapd_dst, self.swapd_src):
                    if case.grant in daemon.client().export_list():
                        daemon.client().export_drop(case.grant, delete=True)
                self.donor.client().grant_free(case.grant)
            elif case.swap == 'local':
                for host in (self.a, self.b):
                    try:
                        os.unlink(host.path(guest.disk_path))
                    except FileNotFoundError:
                        pass  # never made there
                self.migrator.nova.block.pop(guest.uuid, None)

    def _run(self, case, guest):
        last = [time.monotonic()]

        def step(name):
            now = time.monotonic()
            case.steps.append((name, now - last[0]))
            last[0] = now
        guest.define_and_start(BOOT_TIMEOUT)
        dev = None
        if case.swap == 'memagg':
            dev = self._memagg_disk(guest, case)
        elif case.swap == 'local':
            guest.wait_console(r'MEMAGG SWAP on', 30)
            dev = 'vda'
        step('boot')
        checksum = guest.fill(self.args.data_mb,
                              timeout=_data_timeout(self.args.data_mb))
        _balloon_is(guest, self.args.guest_mb * 1024)
        step('fill')
        target = self._squeeze(guest, case, dev)
        beat = self._beat_after(guest, guest.heartbeats())
        step('squeeze')
        _balloon_is(guest, target or self.args.guest_mb * 1024)
        guest.dom.suspend()
        case.used_kb = beat['total_kb'] - beat['free_kb']
        case.remote_kb = beat['swaps'].get(dev, {}).get('used_kb', 0) \
            if dev else 0
        if case.swap == 'memagg':
            stats = self.swapd_src.client().export_stats(case.grant)
            case.stored_mb = stats['stored_pages'] * 4096 / MIB
        # There and back again: the same paused guest, the same bytes,
        # times whose median leaves one slow start of QEMU out.
        ends = [(self.src, self.swapd_src, self.dst, self.swapd_dst),
                (self.dst, self.swapd_dst, self.src, self.swapd_src)]
        for n in range(self.args.repeat):
            src, swapd_src, dst, swapd_dst = ends[n % 2]
            prepare_s, result = self._migrate(case, guest, src, swapd_src,
                                              dst, swapd_dst)
            case.times.append(prepare_s + result.seconds)
            if n + 1 < self.args.repeat:
                # QEMU 7.2 asserts when a guest that came in paused leaves
                # again before it ran (its disks still inactive): resumed
                # and paused again, as a user would have it.
                _resume_pause(dst, guest)
            if n == 0:
                case.prepare_s, case.result = prepare_s, result
                if case.swap == 'local':
                    case.disk_copied = os.stat(
                        dst.path(guest.disk_path)).st_blocks * 512
        conn = dst.connect()
        try:
            conn.lookupByUUIDString(guest.uuid).resume()
        finally:
            conn.close()
        guest.follow(dst)
        step('migrate')
        if self.args.check:
            got = guest.check(timeout=_data_timeout(self.args.data_mb))
            if got != checksum:
                raise RunError('%s: the guest\'s data changed across the '
                               'migration (md5 %s, then %s)'
                               % (case.name, checksum, got))
            step('check')
        return case


def _data_timeout(data_mb):
    """Seconds the guest has to write (or checksum) ``data_mb`` MiB: the
    emulated guest's urandom and md5 run at a few MiB/s on a busy 2-core
    machine."""
    return SETTLE_TIMEOUT + 2 * data_mb


def _resume_pause(host, guest):
    conn = host.connect()
    try:
        dom = conn.lookupByUUIDString(guest.uuid)
        dom.resume()
        dom.suspend()
    finally:
        conn.close()


def _balloon_is(guest, kib):
    """The guest's balloon target is still ours: another process that
    balloons the guests of this libvirtd (the memagg-compute of a test
    running meanwhile) would make the figures meaningless."""
    current = guest.dom.info()[2]
    # The balloon works in pages: a target is rounded.
    if abs(current - kib) > 64:
        raise RunError('%s\'s memory is %d KiB, not the %d KiB this '
                       'benchmark set: something else balloons the guests '
                       'of this libvirtd (a memagg-compute?); run with no '
                       'other guest test' % (guest.name, current, kib))


def _sparse_file(path, size):
    with open(path, 'wb') as f:
        f.truncate(size)
    os.chmod(path, 0o666)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--guest-mb', type=int, default=1024,
                        help='the guest\'s booked memory (default 1024)')
    parser.add_argument('--data-mb', type=int, default=640,
                        help='random data written in the guest (default '
                             '640)')
    parser.add_argument('--shares', type=int, nargs='+',
                        default=[0, 25, 50, 75],
                        help='remote shares of the memagg cases, %% '
                             '(default 0 25 50 75; peer-b is squeezed to '
                             'the middle one)')
    parser.add_argument('--repeat', type=int, default=3,
                        help='migrations of each guest, there and back '
                             'again, paused all along; the median time is '
                             'reported (default 3)')
    parser.add_argument('--bandwidth', type=int, default=112,
                        help='Nova\'s [libvirt] live_migration_bandwidth '
                             'in MiB/s, the speed of the migration network '
                             '(default 112: 1 Gbit/s Ethernet; 0: no '
                             'limit, this machine\'s memory speed)')
    parser.add_argument('--no-check', dest='check', action='store_false',
                        help='skip checking the guest\'s data after each '
                             'migration')
    parser.add_argument('--quick', action='store_true',
                        help='a smoke run for CI: a 256 MiB guest with 64 '
                             'MiB of data, shares 0 and 50, one migration '
                             'each, no data check')
    args = parser.parse_args()
    if args.quick:
        args.guest_mb, args.data_mb = 256, 64
        args.shares, args.check = [0, 50], False
        args.repeat = 1
    if args.repeat <= 0:
        parser.error('--repeat: must be positive, got %d' % args.repeat)
    if args.bandwidth < 0:
        parser.error('--bandwidth: 0 (no limit) or more, got %d'
                     % args.bandwidth)
    if args.guest_mb < 128:
        parser.error('--guest-mb: at least 128, got %d' % args.guest_mb)
    if not 0 < args.data_mb <= args.guest_mb * 3 // 4:
        parser.error('--data-mb: must be positive and at most 3/4 of '
                     '--guest-mb, got %d' % args.data_mb)
    if any(not 0 <= s < 100 for s in args.shares):
        parser.error('--shares: each from 0 to 99, got %s' % args.shares)
    if os.geteuid() != 0:
        parser.error('run as root (libvirtd, a mount namespace)')
    for tool in ('unshare', 'nsenter'):
        if shutil.which(tool) is None:
            parser.error('%s not found (util-linux)' % tool)
    shares = sorted(set(args.shares))
    # The swap disk holds the whole guest; whole slabs.
    args.disk_mb = -(-args.guest_mb * MIB // SLAB_SIZE) * SLAB_SIZE // MIB
    middle_share = shares[len(shares) // 2]
    middle = 'memagg-%d' % middle_share
    plan = [measure.Case(measure.PEER_A, 0, None)]
    plan += [measure.Case('memagg-%d' % s, s / 100, 'memagg')
             for s in shares]
    plan.append(measure.Case(measure.PEER_B, middle_share / 100, 'local'))

    print('live migration host B -> host A as Nova makes it, %d MiB TCG '
          'guest (anonymous memory), %d MiB of random data, guests moved '
          'paused (QEMU 7.2 TCG corrupts guests busy during a migration); '
          'memagg at remote shares %s %%; peer-a: all memory local; '
          'peer-b: swap on a local file squeezed to %d %%, block-migrated; '
          '%d migration(s) per guest (there and back), median time; '
          'migration bandwidth: %s; data checked after the migrations: %s'
          % (args.guest_mb, args.data_mb, ' '.join(map(str, shares)),
             middle_share, args.repeat,
             '%d MiB/s' % args.bandwidth if args.bandwidth else 'no limit',
             'yes' if args.check else 'no'),
          flush=True)
    workdir = tempfile.mkdtemp(prefix='memagg-bench-mig-', dir='/var/tmp')
    os.chmod(workdir, 0o755)
    bench = Bench(args, workdir)
    cases, failed = {}, None
    started = time.monotonic()
    try:
        bench.start()
        for case in plan:
            t0 = time.monotonic()
            try:
                cases[case.name] = bench.run_case(case)
            except (RunError, AssertionError, libvirt.libvirtError,
                    OSError) as exc:
                failed = '%s: %s' % (case.name, exc)
                break
            print('%s done in %.0f s (%s; share %.1f %%, %.1f MiB moved '
                  'in %.2f s)' % (
                      case.name, time.monotonic() - t0,
                      ', '.join('%s %.1f s' % s for s in case.steps),
                      100 * case.measured_share, case.bytes / MIB,
                      case.seconds), flush=True)
    except (RunError, AssertionError, libvirt.libvirtError,
            OSError) as exc:
        failed = 'setting up: %s' % exc
    finally:
        problems = bench.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    if failed:
        print('could not run: %s' % failed, file=sys.stderr)
        for daemon in bench.swapds:
            print('--- %s\n%s' % (daemon.name, daemon.log()[-3000:]),
                  file=sys.stderr)
        return 1
    measure.print_table(cases, middle)
    low, high = 'memagg-%d' % shares[0], 'memagg-%d' % shares[-1]
    if low != high:
        print('time %s / %s: %.2fx' % (high, low, measure.ratio(
            cases[high].seconds, cases[low].seconds)))
    for line in measure.verdicts(cases, middle, low, high):
        print(line)
    print('run time: %.0f s' % (time.monotonic() - started))
    if problems:
        print('did not stop cleanly: %s' % problems, file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
