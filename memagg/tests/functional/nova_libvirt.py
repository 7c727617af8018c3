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

"""A real live migration between the hypervisor hosts of this machine
(memagg.tests.functional.hypervisor_hosts), made as Nova's libvirt driver
makes it.

What comes from Nova's own code (the installed ``nova`` package, run in a
child interpreter: importing nova registers options in the global
oslo.config CONF that clash with memagg's, as in nova_contract):

* the migration flags: ``LibvirtDriver._parse_migration_flags``
  (nova/virt/libvirt/driver.py) with Nova's default [libvirt] options and
  ``virt_type = qemu``, for a non-block migration: VIR_MIGRATE_LIVE,
  PEER2PEER, UNDEFINE_SOURCE and PERSIST_DEST (no TUNNELLED, TLS,
  POSTCOPY, AUTO_CONVERGE or PARALLEL, all off by default), and for a
  block migration (NovaDriverCode.block) its block-migration flags (those
  and VIR_MIGRATE_NON_SHARED_INC);
* the whole migrateToURI3 call: ``LibvirtDriver._live_migration_operation``
  runs against a recording domain wrapped in Nova's
  ``nova.virt.libvirt.guest.Guest``, with the LibvirtLiveMigrateData that
  the destination's ``check_can_live_migrate_destination`` and
  ``pre_live_migration`` fill with Nova's defaults (no serial console,
  no file-backed memory, no perf events, no cpu_shared_set, no volumes,
  ``target_connect_addr`` = the destination's
  ``live_migration_inbound_addr``). So the destination URI
  (``_live_migration_uri``), the migrate URI (``_migrate_uri``), the
  destination and persistent XML (``migration.get_updated_guest_xml`` of
  the domain's migratable XML: it empties ``<memoryBacking>`` of source
  and access, among others) and the bandwidth ([libvirt]
  live_migration_bandwidth, 0) are Nova's; the recorded call is then made
  on the real domain;
* the downtime steps (``migration.downtime_steps`` of
  ``_live_migration_data_gb``), the completion timeout and the stats
  interval ([libvirt] live_migration_completion_timeout,
  live_migration_monitor_interval).

What is restated here, with the same logic: the monitor loop of
``LibvirtDriver._live_migration_monitor`` (driver.py): every 0.5 s
``dom.jobStats()`` read as ``Guest.get_job_info`` reads it (a domain gone
is a completed job), a job of type NONE after the migrate call returned
classified by ``migration.find_job_type`` (source domain still active:
failed), ``migration.update_downtime`` raising the maximum downtime step
by step, the completion timeout aborting the job, and
``migration.save_stats`` every live_migration_monitor_interval (memory
and disk total, processed, remaining: what Nova's API then shows in GET
/servers/{id}/migrations); ``LibvirtDriver._live_migration`` running the
migrate call in a thread beside the monitor; ``live_migration_abort``
(``dom.abortJob()``); on failure, ``rollback_live_migration_at_destination``
destroying what the destination may hold of the domain.

What is left out or simplified: no Neutron (no port bindings, no VIF XML
updates), no volumes, no block migration unless asked (the guest's disks
are shared paths; for a block migration the caller creates the
destination's files, as ``pre_live_migration`` does), no Placement
claims, no NUMA, PCI,
mdev or vPMEM XML updates, no serial console ports, no post-copy or
force-complete, no instance or migration records (callbacks instead),
no pre-checks (CPU comparison, shared storage): a destination that cannot
take the guest fails inside libvirt. Connections to the destination's
libvirtd use the port of the hypervisor_hosts host (Nova's
``live_migration_uri`` template with that port). The migrate call has a
libvirt connection of its own, where Nova shares one with the monitor
(``LiveMigration._operation`` says why).
"""
import dataclasses
import json
import subprocess
import sys
import tempfile
import threading
import time
import traceback

import libvirt
import pytest

# Nova's monitor loop period (_live_migration_monitor's sleep_time).
MONITOR_SLEEP = 0.5
# The status of the migration record Nova leaves for each end of the loop.
COMPLETED = 'completed'
ERROR = 'error'
CANCELLED = 'cancelled'

_NOVA_DRIVER = r"""
import json
import sys
import traceback
import types

import libvirt
import nova.conf
from nova import objects
from nova.virt import hardware
from nova.virt.libvirt import driver
from nova.virt.libvirt import guest as libvirt_guest
from nova.virt.libvirt import migration

objects.register_all()
CONF = nova.conf.CONF
for name, value in json.loads(sys.argv[1]).items():
    CONF.set_override(name, value, group='libvirt')


class RecordingDomain:
    # The source domain as Nova's Guest sees it: its migratable XML in,
    # the migrate call out.

    def __init__(self, xml):
        self.xml = xml
        self.calls = []

    def XMLDesc(self, flags=0):
        assert flags & libvirt.VIR_DOMAIN_XML_MIGRATABLE, flags
        return self.xml

    def migrateToURI3(self, dconnuri, params, flags):
        self.calls.append({'dconnuri': dconnuri, 'params': params,
                           'flags': flags})


drv = object.__new__(driver.LibvirtDriver)
drv._parse_migration_flags()
print(json.dumps({
    'live_migration_flags': drv._live_migration_flags,
    'block_migration_flags': drv._block_migration_flags,
    'monitor_interval': CONF.libvirt.live_migration_monitor_interval,
}), flush=True)
for line in sys.stdin:
    req = json.loads(line)
    try:
        CONF.set_override('live_migration_uri', req['live_migration_uri'],
                          group='libvirt')
        instance = types.SimpleNamespace(
            uuid=req['uuid'], vm_state='active',
            flavor=types.SimpleNamespace(memory_mb=req['memory_mb'],
                                         extra_specs=req['extra_specs']))
        data = objects.LibvirtLiveMigrateData(
            image_type=CONF.libvirt.images_type,
            graphics_listen_addr_vnc=CONF.vnc.server_listen,
            graphics_listen_addr_spice=CONF.spice.server_listen,
            serial_listen_addr=None,
            block_migration=req['block_migration'],
            dst_wants_file_backed_memory=CONF.libvirt.file_backed_memory > 0,
            dst_cpu_shared_set_info=(hardware.get_cpu_shared_set()
                                     or hardware.get_vcpu_pin_set()
                                     or set()),
            bdms=[], target_connect_addr=req['inbound_addr'],
            supported_perf_events=[], serial_listen_ports=[])
        domain = RecordingDomain(req['xml'])
        drv._live_migration_operation(
            None, instance, req['dest'], req['block_migration'], data,
            libvirt_guest.Guest(domain), req['device_names'])
        data_gb = drv._live_migration_data_gb(instance, req['disk_paths'])
        answer = {
            'call': domain.calls[0],
            'downtime_steps': list(migration.downtime_steps(data_gb)),
            'completion_timeout': int(
                CONF.libvirt.live_migration_completion_timeout * data_gb)}
    except Exception:
        answer = {'error': traceback.format_exc()}
    print(json.dumps(answer), flush=True)
"""


def flag_names(flags):
    """The VIR_MIGRATE_* names of the bits set in ``flags``."""
    names = [name for name in dir(libvirt)
             if name.startswith('VIR_MIGRATE_')
             and not name.startswith('VIR_MIGRATE_PARAM')
             and isinstance(getattr(libvirt, name), int)]
    return sorted(name for name in names
                  if bin(getattr(libvirt, name)).count('1') == 1
                  and flags & getattr(libvirt, name))


class NovaDriverCode:
    """Nova's libvirt driver code in a child interpreter, asked what it
    would call (see the module); ``libvirt_options`` overrides Nova's
    [libvirt] defaults (virt_type is qemu: TCG guests).
    ``block[uuid] = (device names, disk paths)`` makes that domain's
    migration a block migration of those disks, as Nova's driver makes it
    for a guest with local disks."""

    def __init__(self, libvirt_options=None):
        pytest.importorskip('nova', reason='the nova package provides '
                                           'Nova\'s libvirt driver')
        options = dict({'virt_type': 'qemu'}, **(libvirt_options or {}))
        self.block = {}
        self._lock = threading.Lock()
        # A file, not a pipe: nothing reads Nova's warnings as they come.
        self._stderr = tempfile.TemporaryFile(mode='w+')
        self._proc = subprocess.Popen(
            [sys.executable, '-c', _NOVA_DRIVER, json.dumps(options)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self._stderr, text=True)
        first = self._proc.stdout.readline()
        if not first:
            raise AssertionError('Nova\'s driver code did not start:\n%s'
                                 % self._errors())
        config = json.loads(first)
        self.live_migration_flags = config['live_migration_flags']
        self.block_migration_flags = config['block_migration_flags']
        self.monitor_interval = config['monitor_interval']

    def _errors(self):
        self._stderr.seek(0)
        return self._stderr.read()

    def migrate_call(self, uuid, xml, memory_mb, dest, extra_specs=None):
        """What Nova's _live_migration_operation would call on the domain
        of ``uuid`` (migratable ``xml``) to move it to Hypervisor
        ``dest``: {'call': {'dconnuri', 'params', 'flags'},
        'downtime_steps': [[s, ms]...], 'completion_timeout': s}."""
        device_names, disk_paths = self.block.get(uuid, ([], []))
        request = {'uuid': uuid, 'xml': xml, 'memory_mb': memory_mb,
                   'extra_specs': extra_specs or {}, 'dest': dest.name,
                   'inbound_addr': dest.address,
                   'live_migration_uri': 'qemu+tcp://%%s:%d/system'
                   % dest.port,
                   'block_migration': bool(device_names),
                   'device_names': device_names, 'disk_paths': disk_paths}
        with self._lock:
            self._proc.stdin.write(json.dumps(request) + '\n')
            self._proc.stdin.flush()
            line = self._proc.stdout.readline()
        if not line:
            raise AssertionError('Nova\'s driver code exited:\n%s'
                                 % self._errors())
        answer = json.loads(line)
        if 'error' in answer:
            raise AssertionError('Nova\'s driver code failed:\n%s'
                                 % answer['error'])
        return answer

    def close(self):
        self._proc.stdin.close()
        try:
            self._proc.wait(30)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._proc.stdout.close()
        self._stderr.close()


@dataclasses.dataclass
class MigrationResult:
    """How a live migration ended.

    ``status``: COMPLETED, ERROR or CANCELLED (the migration record's
    status Nova leaves); ``error``: the migrate call's error, if any;
    ``seconds``: wall time of the migrate call; ``job``: libvirt's
    completed job statistics (jobStats(VIR_DOMAIN_JOB_STATS_COMPLETED) of
    the destination's domain after success: time_elapsed and downtime in
    ms, memory_processed, data_processed, memory_total,
    memory_normal_bytes, ...); after a failure libvirt keeps none, and
    ``job`` is the monitor's last reading of the job in progress (empty
    when it saw none); ``saved``: the statistics the monitor saved while
    it ran (what Nova's API showed); ``call``: the migrateToURI3 call
    made ({'dconnuri', 'params', 'flags'}; None when none was).
    """

    status: str
    error: str
    seconds: float
    job: dict
    saved: list
    call: dict = None

    @property
    def memory_processed(self):
        return self.job.get('memory_processed')

    @property
    def data_processed(self):
        return self.job.get('data_processed')

    @property
    def downtime_ms(self):
        return self.job.get('downtime')

    @property
    def time_elapsed_ms(self):
        return self.job.get('time_elapsed')


class LiveMigration:
    """One live migration in progress (LiveMigrator.start)."""

    def __init__(self, migrator, uuid, source, dest, on_stats, on_end):
        self.uuid = uuid
        self.source = source
        self.dest = dest
        self.result = None
        self.saved = []
        self.call = None
        self._migrator = migrator
        self._on_stats = on_stats
        self._on_end = on_end
        self._done = threading.Event()
        self._op_done = threading.Event()
        self._op_error = None
        self._op_seconds = None
        self._last_job = {}
        self._conn = source.connect()
        try:
            self._dom = self._conn.lookupByUUIDString(uuid)
        except libvirt.libvirtError:
            self._conn.close()
            raise
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name='live-migration-%s' % uuid)

    # -- Nova's _live_migration: the migrate call in a thread, the monitor

    def _run(self):
        try:
            plan = self._migrator.nova.migrate_call(
                self.uuid,
                self._dom.XMLDesc(libvirt.VIR_DOMAIN_XML_MIGRATABLE),
                self._dom.maxMemory() // 1024, self.dest)
            self.call = plan['call']
            operation = threading.Thread(
                target=self._operation, args=(self.call,), daemon=True,
                name='live-migration-operation-%s' % self.uuid)
            operation.start()
            try:
                status = self._monitor(plan)
            except Exception:
                # As _live_migration: no job left to finish behind the
                # record's back, and no wait for the migrate call (an
                # abort that found no job leaves it running).
                try:
                    self._dom.abortJob()
                except libvirt.libvirtError:
                    pass  # no job any more
                raise
            # The job is over: the migrate call returns.
            operation.join()
            self.result = self._finish(status)
        except Exception as exc:  # noqa: BLE001 - the end is recorded
            self.result = MigrationResult(
                ERROR, _describe(exc), self._op_seconds or 0.0,
                self._last_job, self.saved, self.call)
        finally:
            self._conn.close()
            self._done.set()
            if self._on_end is not None:
                self._on_end(self)

    def _operation(self, call):
        # A connection of its own, where Nova shares one: libvirt 9.0's RPC
        # client can lose the wake-up of a call queued behind this one,
        # which holds its connection for the whole migration (seen here:
        # the monitor's migrateSetMaxDowntime never sent for 120 s, so no
        # statistics saved, about one run in ten on a loaded machine).
        start = time.monotonic()
        conn = None
        try:
            conn = self.source.connect()
            conn.lookupByUUIDString(self.uuid).migrateToURI3(
                call['dconnuri'], call['params'], call['flags'])
        except libvirt.libvirtError as exc:
            self._op_error = exc.get_error_message()
        finally:
            if conn is not None:
                conn.close()
            self._op_seconds = time.monotonic() - start
            self._op_done.set()

    def _job_info(self):
        """Guest.get_job_info: the job's stats; a domain gone means the
        job completed."""
        try:
            return self._dom.jobStats()
        except libvirt.libvirtError as exc:
            if exc.get_error_code() in (libvirt.VIR_ERR_NO_DOMAIN,
                                        libvirt.VIR_ERR_OPERATION_INVALID):
                return {'type': libvirt.VIR_DOMAIN_JOB_COMPLETED}
            if (exc.get_error_code() == libvirt.VIR_ERR_INTERNAL_ERROR
                    and 'migration was active, but no RAM info was set'
                    in (exc.get_error_message() or '')):
                return {'type': libvirt.VIR_DOMAIN_JOB_NONE}
            raise

    def _find_job_type(self):
        """migration.find_job_type: still running on the source after the
        migrate call returned means it failed."""
        try:
            return (libvirt.VIR_DOMAIN_JOB_FAILED if self._dom.isActive()
                    else libvirt.VIR_DOMAIN_JOB_COMPLETED)
        except libvirt.libvirtError as exc:
            if exc.get_error_code() == libvirt.VIR_ERR_NO_DOMAIN:
                return libvirt.VIR_DOMAIN_JOB_COMPLETED
            return libvirt.VIR_DOMAIN_JOB_FAILED

    def _monitor(self, plan):
        """_live_migration_monitor; returns the migration's status."""
        nova = self._migrator.nova
        steps = plan['downtime_steps']
        divisor = int(nova.monitor_interval / MONITOR_SLEEP)
        downtime = None
        n = 0
        start = time.monotonic()
        while True:
            info = self._job_info()
            kind = info.get('type', libvirt.VIR_DOMAIN_JOB_NONE)
            if kind == libvirt.VIR_DOMAIN_JOB_NONE and self._op_done.is_set():
                kind = self._find_job_type()
            if kind == libvirt.VIR_DOMAIN_JOB_UNBOUNDED:
                self._last_job = info
                elapsed = time.monotonic() - start
                timeout = plan['completion_timeout']
                if timeout and elapsed > timeout:
                    # live_migration_timeout_action 'abort' (the default;
                    # force_complete is left out).
                    self.abort()
                downtime = self._update_downtime(downtime, steps, elapsed)
                if n % divisor == 0:
                    self._save_stats(info)
                n += 1
            elif kind == libvirt.VIR_DOMAIN_JOB_COMPLETED:
                return COMPLETED
            elif kind == libvirt.VIR_DOMAIN_JOB_FAILED:
                return ERROR
            elif kind == libvirt.VIR_DOMAIN_JOB_CANCELLED:
                return CANCELLED
            # Nova's monitor polls libvirt at this period.
            time.sleep(MONITOR_SLEEP)

    def _update_downtime(self, current, steps, elapsed):
        """migration.update_downtime: the step whose time has come."""
        step = None
        for candidate in steps:
            if elapsed > candidate[0]:
                step = candidate
        if step is None or step[1] == current:
            return current
        try:
            self._dom.migrateSetMaxDowntime(step[1], 0)
        except libvirt.libvirtError:
            pass  # Nova logs a warning and goes on
        return step[1]

    def _save_stats(self, info):
        """migration.save_stats: what Nova's Migration record keeps."""
        stats = {key: info.get(key, 0) for key in (
            'memory_total', 'memory_processed', 'memory_remaining',
            'disk_total', 'disk_processed', 'disk_remaining')}
        self.saved.append(stats)
        if self._on_stats is not None:
            self._on_stats(self, stats)

    def _finish(self, status):
        """The result; on failure, what the destination holds of the
        domain is destroyed (rollback_live_migration_at_destination)."""
        dest = self.dest.connect()
        try:
            dest_dom = _lookup(dest, self.uuid)
            if status == COMPLETED:
                # Kept for memagg-compute, which reads them after
                # (Nova itself never reads them).
                job = dest_dom.jobStats(
                    libvirt.VIR_DOMAIN_JOB_STATS_COMPLETED
                    | libvirt.VIR_DOMAIN_JOB_STATS_KEEP_COMPLETED) \
                    if dest_dom else {}
            else:
                if dest_dom is not None:
                    if dest_dom.isActive():
                        dest_dom.destroy()
                    if dest_dom.isPersistent():
                        dest_dom.undefine()
                job = self._last_job
        finally:
            dest.close()
        return MigrationResult(status, self._op_error, self._op_seconds,
                               job, self.saved, self.call)

    # -- from outside

    def abort(self):
        """LibvirtDriver.live_migration_abort: abort the libvirt job
        (libvirt.libvirtError when there is none)."""
        self._dom.abortJob()

    def wait(self, timeout):
        """The MigrationResult, once the migration ended."""
        if not self._done.wait(timeout):
            raise AssertionError('live migration of %s not over within '
                                 '%s s' % (self.uuid, timeout))
        return self.result

    def done(self):
        return self._done.is_set()

    def where(self):
        """Where the migration's thread is now (its Python stack), or
        that it ended: for a failure's message."""
        # The interpreter's one way to read another thread's stack.
        frame = sys._current_frames().get(self._thread.ident)  # noqa: SLF001
        if frame is None:
            return 'thread %s ended' % self._thread.name
        return 'thread %s at:\n%s' % (
            self._thread.name, ''.join(traceback.format_stack(frame)))


def _describe(exc):
    """An exception as a migration's error: libvirt's code with it."""
    if isinstance(exc, libvirt.libvirtError):
        return 'libvirtError %s (code %s)' % (exc.get_error_message(),
                                              exc.get_error_code())
    return repr(exc)


def _lookup(conn, uuid):
    try:
        return conn.lookupByUUIDString(uuid)
    except libvirt.libvirtError as exc:
        if exc.get_error_code() == libvirt.VIR_ERR_NO_DOMAIN:
            return None
        raise


class LiveMigrator:
    """Live-migrates domains between the hypervisor_hosts ``hosts``
    ({Nova host name: Hypervisor}) as Nova's libvirt driver does; see the
    module."""

    def __init__(self, hosts, libvirt_options=None):
        self.hosts = dict(hosts)
        self.nova = NovaDriverCode(libvirt_options)

    def start(self, uuid, source, dest, on_stats=None, on_end=None):
        """Start moving the domain ``uuid`` from host ``source`` to host
        ``dest`` (names); a LiveMigration. ``on_stats(migration, stats)``
        is called with each save of the statistics, ``on_end(migration)``
        once it ended (in the migration's thread)."""
        migration = LiveMigration(self, uuid, self.hosts[source],
                                  self.hosts[dest], on_stats, on_end)
        migration._thread.start()  # noqa: SLF001 - its own class's
        return migration

    def migrate(self, uuid, source, dest, timeout=300):
        """Move the domain and wait; the MigrationResult."""
        return self.start(uuid, source, dest).wait(timeout)

    def close(self):
        self.nova.close()
