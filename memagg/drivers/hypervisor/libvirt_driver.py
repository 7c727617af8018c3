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

"""The libvirt hypervisor driver (libvirt-python).

Guest RAM inside the QEMU process is found with :mod:`qemu_process` from
the QEMU monitor's answers, or else from /proc/PID/maps.
"""
import threading
import xml.etree.ElementTree as ElementTree

import libvirt
import libvirt_qemu
from oslo_log import log as logging

from memagg.drivers.hypervisor import base
from memagg.drivers.hypervisor import qemu_process

LOG = logging.getLogger(__name__)

# Errors after which the connection is dead (libvirtd restarted or gone):
# reopen it once and read again.
_CONNECTION_ERRORS = frozenset((
    libvirt.VIR_ERR_SYSTEM_ERROR,
    libvirt.VIR_ERR_INTERNAL_ERROR,
    libvirt.VIR_ERR_NO_CONNECT,
    libvirt.VIR_ERR_INVALID_CONN,
    libvirt.VIR_ERR_RPC,
))

# What one connectGetAllDomainStats call reads of every running domain, in
# place of dom.info() and dom.memoryStats() per domain.
_BULK_STATS = (libvirt.VIR_DOMAIN_STATS_CPU_TOTAL
               | libvirt.VIR_DOMAIN_STATS_BALLOON
               | libvirt.VIR_DOMAIN_STATS_VCPU)
# The bulk call's balloon.* keys that memoryStats() names otherwise.
_BULK_BALLOON_KEYS = {'current': 'actual', 'last-update': 'last_update'}


def bulk_domain_values(stats):
    """(max KiB, current KiB, vCPUs, CPU time ns, memoryStats()-style dict)
    of one domain's connectGetAllDomainStats record, or None when the
    driver left out what dom.info() would give (libvirt's test driver)."""
    try:
        values = (stats['balloon.maximum'], stats['balloon.current'],
                  stats['vcpu.current'], stats['cpu.time'])
    except KeyError:
        return None
    memory = {}
    for key, value in stats.items():
        if key.startswith('balloon.') and key != 'balloon.maximum':
            name = key[len('balloon.'):]
            memory[_BULK_BALLOON_KEYS.get(name, name)] = value
    return values + (memory,)


def _quiet_error_handler(_ctx, _error):
    """libvirt's default handler prints every error to stderr; memagg
    handles the raised libvirtError and logs it instead.
    """


libvirt.registerErrorHandler(_quiet_error_handler, None)


def swap_disk_xml(socket_path, export_name, serial, target,
                  reconnect_delay=0):
    """The <disk> of a remote-swap export: NBD over a unix socket, raw,
    no host cache (memagg-swapd keeps the data), virtio, ``serial``.

    A broken connection to memagg-swapd (its crash or restart) must not
    reach the guest as an I/O error, which on swap kills the process whose
    page could not be read back: QEMU holds the disk's I/O for
    ``reconnect_delay`` seconds (>0) while it reconnects, and on an error
    all the same the VM pauses (error policies 'stop') rather than seeing
    it, until it is resumed."""
    disk = ElementTree.Element('disk', type='network', device='disk')
    ElementTree.SubElement(disk, 'driver', name='qemu', type='raw',
                           cache='none', error_policy='stop',
                           rerror_policy='stop')
    source = ElementTree.SubElement(disk, 'source', protocol='nbd',
                                    name=export_name)
    ElementTree.SubElement(source, 'host', transport='unix',
                           socket=socket_path)
    if reconnect_delay:
        ElementTree.SubElement(source, 'reconnect',
                               delay=str(reconnect_delay))
    ElementTree.SubElement(disk, 'target', dev=target, bus='virtio')
    ElementTree.SubElement(disk, 'serial').text = serial
    return ElementTree.tostring(disk, encoding='unicode')


def disk_targets(domain):
    """The target devs of every disk of ``domain`` (an Element)."""
    return {target.get('dev') for target in
            domain.findall('./devices/disk/target')}


def _disk_name(index):
    """vda, ..., vdz, vdaa, vdab, ...: libvirt's names of virtio disks."""
    letters = ''
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        letters = chr(ord('a') + rest) + letters
    return 'vd' + letters


def free_virtio_target(used):
    """The first virtio disk name (vda, vdb, ...) not in ``used``."""
    index = 0
    while _disk_name(index) in used:
        index += 1
    return _disk_name(index)


def find_disk(domain, serial):
    """The <disk> of ``domain`` (an Element) with ``serial``, or None."""
    for disk in domain.findall('./devices/disk'):
        if (disk.findtext('serial') or '').strip() == serial:
            return disk
    return None


def job_stats_of_migration(dom):
    """The MigrationStats of ``dom``'s last completed job when it was a
    live migration, else None. libvirt keeps a completed job's statistics
    on the destination of a migration (and on a source that keeps the
    domain) until the next job, unless a reader without
    VIR_DOMAIN_JOB_STATS_KEEP_COMPLETED takes them: memagg keeps them, for
    other readers and for a retried call."""
    stats = dom.jobStats(libvirt.VIR_DOMAIN_JOB_STATS_COMPLETED
                         | libvirt.VIR_DOMAIN_JOB_STATS_KEEP_COMPLETED)
    operation = stats.get('operation')
    if operation not in (libvirt.VIR_DOMAIN_JOB_OPERATION_MIGRATION_IN,
                         libvirt.VIR_DOMAIN_JOB_OPERATION_MIGRATION_OUT):
        return None
    return base.MigrationStats(
        memory_bytes=stats.get('memory_processed'),
        data_bytes=stats.get('data_processed'),
        time_ms=stats.get('time_elapsed'),
        downtime_ms=stats.get('downtime'))


#: Seconds answers() waits for a connection: libvirt's open has no
#: timeout of its own and waits as long as a daemon that accepted the
#: connection does not answer.
ANSWER_TIMEOUT = 10.0


def answers(uri, timeout=ANSWER_TIMEOUT):
    """Whether a libvirt connection to ``uri`` can be opened within
    ``timeout`` seconds."""
    errors = []

    def connect():
        try:
            # Closed even when it opens after answers() gave up.
            libvirt.open(uri).close()
        except libvirt.libvirtError as exc:
            errors.append(exc.get_error_message())

    # A daemon thread: a connection that never opens holds no one up.
    opener = threading.Thread(target=connect, daemon=True,
                              name='memagg-libvirt-probe')
    opener.start()
    opener.join(timeout)
    waiting = opener.is_alive()
    if waiting:
        LOG.warning('libvirt at %s does not answer: no connection within '
                    '%.0f s', uri, timeout)
    elif errors:
        LOG.info('libvirt at %s does not answer: %s', uri, errors[0])
    return not waiting and not errors


class LibvirtDriver(base.HypervisorDriver):
    """Reads the host and its running domains from libvirt at ``uri``."""

    def __init__(self, uri):
        self.uri = uri
        self._conn = None
        self._lock = threading.Lock()
        self._reconnect_warned = False
        self._full_warned = set()   # uuids of VMs paused on a full disk
        # uuid -> ((domain id, name), (has a balloon, stats period)).
        self._static = {}

    def _connection(self):
        if self._conn is None:
            self._conn = libvirt.open(self.uri)
            LOG.info('Connected to libvirt at %s', self.uri)
        return self._conn

    def _with_reconnect(self, func):
        """func(connection), reconnecting once when the connection is
        dead; HypervisorUnavailable when libvirtd does not answer."""
        with self._lock:
            try:
                return func(self._connection())
            except libvirt.libvirtError as exc:
                if (exc.get_error_code() not in _CONNECTION_ERRORS
                        and self._alive()):
                    raise
                LOG.warning('libvirt connection to %s lost (%s); '
                            'reconnecting', self.uri, exc)
                self._drop()
            try:
                return func(self._connection())
            except libvirt.libvirtError as exc:
                if self._alive():
                    raise
                self._drop()
                raise base.HypervisorUnavailable(
                    'libvirt at %s does not answer: %s'
                    % (self.uri, exc.get_error_message())) from exc

    def _alive(self):
        try:
            return self._conn is not None and self._conn.isAlive() == 1
        except libvirt.libvirtError:
            return False

    def _drop(self):
        if self._conn is not None:
            try:
                self._conn.close()
            except libvirt.libvirtError:
                # Closing a connection whose daemon is gone may fail too.
                pass
            self._conn = None

    def get_host_info(self):
        return self._with_reconnect(self._host_info)

    @staticmethod
    def _host_info(conn):
        _model, memory_mb, cpus = conn.getInfo()[:3]
        busy = total = None
        try:
            stats = conn.getCPUStats(libvirt.VIR_NODE_CPU_STATS_ALL_CPUS)
        except libvirt.libvirtError:
            stats = None  # not every driver (test://) has CPU counters
        if stats and 'idle' in stats:
            total = sum(stats.values())
            busy = total - stats['idle'] - stats.get('iowait', 0)
        return base.HostInfo(
            hostname=conn.getHostname(), memory_mb=memory_mb,
            free_memory_mb=conn.getFreeMemory() // (1024 * 1024),
            vcpus=cpus, cpu_busy_ns=busy, cpu_total_ns=total)

    def list_domains(self):
        return self._with_reconnect(self._domains)

    def _domains(self, conn):
        records = conn.getAllDomainStats(
            _BULK_STATS, libvirt.VIR_CONNECT_GET_ALL_DOMAINS_STATS_ACTIVE)
        result, seen = [], set()
        for dom, stats in records:
            try:
                result.append(self._domain_info(dom, stats))
            except libvirt.libvirtError as exc:
                if exc.get_error_code() != libvirt.VIR_ERR_NO_DOMAIN:
                    raise
                LOG.debug('Domain vanished while being read: %s', exc)
                continue
            seen.add(result[-1].uuid)
        for uuid in [u for u in self._static if u not in seen]:
            del self._static[uuid]
        return result

    def _balloon_device(self, dom):
        """(has a balloon, its statistics period) of ``dom``, from its XML
        once per run of the domain: the device cannot be hot-plugged, and
        the period changes through set_stats_period(), which forgets it."""
        key = (dom.ID(), dom.name())
        cached = self._static.get(dom.UUIDString())
        if cached is not None and cached[0] == key:
            return cached[1]
        balloon = ElementTree.fromstring(dom.XMLDesc()).find(
            './devices/memballoon')
        has_balloon = balloon is not None and balloon.get('model') != 'none'
        period = balloon.find('stats') if has_balloon else None
        device = (has_balloon, int(period.get('period', 0))
                  if period is not None else 0)
        self._static[dom.UUIDString()] = (key, device)
        return device

    def _domain_info(self, dom, stats):
        """DomainInfo of ``dom`` from its bulk ``stats``; dom.info() and
        dom.memoryStats() where they lack what is needed."""
        has_balloon, period = self._balloon_device(dom)
        bulk = bulk_domain_values(stats)
        if bulk is not None:
            max_kib, cur_kib, vcpus, cpu_time, memory = bulk
        else:
            _state, max_kib, cur_kib, vcpus, cpu_time = dom.info()
            try:
                memory = dom.memoryStats() if has_balloon else {}
            except libvirt.libvirtError as exc:
                if exc.get_error_code() == libvirt.VIR_ERR_NO_DOMAIN:
                    raise
                memory = {}  # the driver has no stats for this guest
        return base.DomainInfo(
            uuid=dom.UUIDString(), name=dom.name(),
            max_memory_mb=max_kib // 1024, current_memory_mb=cur_kib // 1024,
            vcpus=vcpus, cpu_time_ns=cpu_time,
            memory_stats=dict(memory) if has_balloon else {},
            balloon=has_balloon, stats_period=period)

    def _on_domain(self, uuid, func):
        """func(dom) on domain ``uuid``; DomainGone when it is not there,
        Unsupported when libvirt cannot do it."""
        def call(conn):
            try:
                return func(conn.lookupByUUIDString(uuid))
            except libvirt.libvirtError as exc:
                code = exc.get_error_code()
                if code in (libvirt.VIR_ERR_NO_DOMAIN,
                            libvirt.VIR_ERR_OPERATION_INVALID):
                    raise base.DomainGone(uuid) from exc
                if code in (libvirt.VIR_ERR_NO_SUPPORT,
                            libvirt.VIR_ERR_ARGUMENT_UNSUPPORTED,
                            libvirt.VIR_ERR_OPERATION_UNSUPPORTED,
                            libvirt.VIR_ERR_CONFIG_UNSUPPORTED):
                    raise base.Unsupported(exc.get_error_message()) from exc
                raise
        return self._with_reconnect(call)

    def set_stats_period(self, uuid, seconds):
        def set_period(dom):
            # Under the connection's lock, as list_domains() reads it.
            self._static.pop(uuid, None)
            dom.setMemoryStatsPeriod(seconds, libvirt.VIR_DOMAIN_AFFECT_LIVE)
        self._on_domain(uuid, set_period)

    def set_balloon(self, uuid, target_mb):
        self._on_domain(uuid, lambda dom: dom.setMemoryFlags(
            target_mb * 1024, libvirt.VIR_DOMAIN_AFFECT_LIVE))

    def guest_memory(self, uuid):
        return self._on_domain(uuid, self._guest_memory)

    def attach_swap_disk(self, uuid, socket_path, export_name, serial,
                         reconnect_delay=0):
        return self._on_domain(uuid, lambda dom: self._attach_swap_disk(
            dom, socket_path, export_name, serial, reconnect_delay))

    def _attach_swap_disk(self, dom, socket_path, export_name, serial,
                          reconnect_delay):
        live = ElementTree.fromstring(dom.XMLDesc())
        plugged = find_disk(live, serial)
        if plugged is not None:
            return plugged.find('target').get('dev')
        used = disk_targets(live)
        flags = libvirt.VIR_DOMAIN_AFFECT_LIVE
        if dom.isPersistent():
            config = ElementTree.fromstring(
                dom.XMLDesc(libvirt.VIR_DOMAIN_XML_INACTIVE))
            used |= disk_targets(config)
            # Kept in the definition so the guest finds its swap after a
            # restart of its QEMU; a copy already there is not doubled.
            if find_disk(config, serial) is None:
                flags |= libvirt.VIR_DOMAIN_AFFECT_CONFIG
        target = free_virtio_target(used)
        dom.attachDeviceFlags(
            swap_disk_xml(socket_path, export_name, serial, target,
                          reconnect_delay), flags)
        LOG.info('Attached NBD export %s (%s) to %s as %s (serial %s)',
                 export_name, socket_path, dom.name(), target, serial)
        if reconnect_delay:
            self._check_reconnect(dom, serial)
        return target

    def _check_reconnect(self, dom, serial):
        """Warn (once per driver) when libvirt dropped the disk's
        <reconnect>: it ignores the elements it does not know."""
        plugged = find_disk(ElementTree.fromstring(dom.XMLDesc()), serial)
        if (plugged is None or plugged.find('source/reconnect') is not None
                or self._reconnect_warned):
            return
        self._reconnect_warned = True
        LOG.warning('libvirt %s kept no <reconnect delay> on the remote-swap '
                    'disk %s of %s: QEMU will not wait for a restarted '
                    'memagg-swapd, and the VM pauses on the disk\'s error '
                    'until memagg-compute resumes it ([swapd] '
                    'reconnect_delay needs a libvirt with <reconnect> on '
                    'NBD disks)', self._lib_version(dom), serial, dom.name())

    @staticmethod
    def _lib_version(dom):
        version = dom.connect().getLibVersion()
        return '%d.%d.%d' % (version // 1000000, version // 1000 % 1000,
                             version % 1000)

    def migration_stats(self, uuid):
        return self._on_domain(uuid, job_stats_of_migration)

    def detach_swap_disk(self, uuid, serial):
        return self._on_domain(uuid, lambda dom: self._detach_swap_disk(
            dom, serial))

    @staticmethod
    def _detach_swap_disk(dom, serial):
        found = False
        views = []
        if dom.isActive():
            views.append((libvirt.VIR_DOMAIN_AFFECT_LIVE, 0))
        if dom.isPersistent():
            views.append((libvirt.VIR_DOMAIN_AFFECT_CONFIG,
                          libvirt.VIR_DOMAIN_XML_INACTIVE))
        for flag, xml_flags in views:
            disk = find_disk(ElementTree.fromstring(dom.XMLDesc(xml_flags)),
                             serial)
            if disk is None:
                continue
            dom.detachDeviceFlags(
                ElementTree.tostring(disk, encoding='unicode'), flag)
            found = True
        if found:
            LOG.info('Detached the disk with serial %s from %s', serial,
                     dom.name())
        return found

    def resume_after_swap_error(self, uuid, serials):
        return self._on_domain(uuid, lambda dom: self._resume_after_swap_error(
            dom, serials))

    def _resume_after_swap_error(self, dom, serials):
        state, reason = dom.state()
        if (state != libvirt.VIR_DOMAIN_PAUSED
                or reason != libvirt.VIR_DOMAIN_PAUSED_IOERROR):
            self._full_warned.discard(dom.UUIDString())
            return False
        live = ElementTree.fromstring(dom.XMLDesc())
        ours = {disk.find('target').get('dev') for disk in
                (find_disk(live, serial) for serial in serials)
                if disk is not None}
        errors = dom.diskErrors()
        failed = set(errors)
        # Another disk's error is not memagg's to clear.
        if not failed or not failed <= ours:
            return False
        if libvirt.VIR_DOMAIN_DISK_ERROR_NO_SPACE in errors.values():
            # Resumed, it would pause again at once: the local copies'
            # disk ([swapd] state_dir) needs room first.
            if dom.UUIDString() not in self._full_warned:
                self._full_warned.add(dom.UUIDString())
                LOG.error('%s is paused: its remote-swap disk %s is out of '
                          'space (the local copy\'s disk, [swapd] '
                          'state_dir, is full); resume it once there is '
                          'room', dom.name(), ', '.join(sorted(failed)))
            return False
        dom.resume()
        LOG.warning('Resumed %s, paused on an error of its remote-swap disk '
                    '%s (memagg-swapd was away): QEMU retries the I/O',
                    dom.name(), ', '.join(sorted(failed)))
        return True

    @staticmethod
    def _hmp(dom, command):
        return libvirt_qemu.qemuMonitorCommand(
            dom, command, libvirt_qemu.VIR_DOMAIN_QEMU_MONITOR_COMMAND_HMP)

    def _guest_memory(self, dom):
        name = dom.name()
        pid = qemu_process.qemu_pid(name)
        if pid is None:
            raise base.Unsupported('no QEMU process found for domain %s'
                                   % name)
        try:
            with open('/proc/%d/maps' % pid) as f:
                maps = qemu_process.parse_maps(f.read())
        except OSError as exc:
            raise base.DomainGone(dom.UUIDString()) from exc
        max_bytes = dom.maxMemory() * 1024
        try:
            found = qemu_process.parse_gpa2hva(self._hmp(dom, 'gpa2hva 0'))
            length = (qemu_process.parse_ramblock(
                self._hmp(dom, 'info ramblock'), found[0])
                if found else None)
        except libvirt.libvirtError as exc:
            if exc.get_error_code() == libvirt.VIR_ERR_NO_DOMAIN:
                raise
            LOG.debug('QEMU monitor of %s unavailable (%s); looking for '
                      'its RAM by size', name, exc)
            found = length = None
        if found and length:
            mapping = qemu_process.mapping_of(maps, found[1])
            if mapping is not None and found[1] + length <= mapping[1]:
                return base.GuestMemory(pid, found[1], length,
                                        'monitor:%s' % found[0])
        start = qemu_process.ram_mapping_by_size(maps, max_bytes)
        if start is None:
            raise base.Unsupported(
                'no mapping of %d bytes (the guest\'s memory) in QEMU '
                'process %d of %s' % (max_bytes, pid, name))
        return base.GuestMemory(pid, start, max_bytes, 'maps:size')

    def close(self):
        with self._lock:
            self._drop()
