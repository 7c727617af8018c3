"""The libvirt hypervisor driver (libvirt-python)."""
import threading

import libvirt
from oslo_log import log as logging

from memagg.drivers.hypervisor import base

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


def _quiet_error_handler(_ctx, _error):
    """libvirt's default handler prints every error to stderr; memagg
    handles the raised libvirtError and logs it instead.
    """


libvirt.registerErrorHandler(_quiet_error_handler, None)


def answers(uri):
    """Whether a libvirt connection to ``uri`` can be opened now."""
    try:
        libvirt.open(uri).close()
    except libvirt.libvirtError as exc:
        LOG.info('libvirt at %s does not answer: %s', uri,
                 exc.get_error_message())
        return False
    return True


class LibvirtDriver(base.HypervisorDriver):
    """Reads the host and its running domains from libvirt at ``uri``."""

    def __init__(self, uri):
        self.uri = uri
        self._conn = None
        self._lock = threading.Lock()

    def _connection(self):
        if self._conn is None:
            self._conn = libvirt.open(self.uri)
            LOG.info('Connected to libvirt at %s', self.uri)
        return self._conn

    def _with_reconnect(self, func):
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
                return func(self._connection())

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
        result = []
        flags = libvirt.VIR_CONNECT_LIST_DOMAINS_ACTIVE
        for dom in conn.listAllDomains(flags):
            try:
                result.append(self._domain_info(dom))
            except libvirt.libvirtError as exc:
                if exc.get_error_code() != libvirt.VIR_ERR_NO_DOMAIN:
                    raise
                LOG.debug('Domain vanished while being read: %s', exc)
        return result

    @staticmethod
    def _domain_info(dom):
        _state, max_kib, cur_kib, vcpus, cpu_time = dom.info()
        try:
            stats = dom.memoryStats()
        except libvirt.libvirtError as exc:
            if exc.get_error_code() == libvirt.VIR_ERR_NO_DOMAIN:
                raise
            stats = {}  # no balloon device, or the driver has no stats
        return base.DomainInfo(
            uuid=dom.UUIDString(), name=dom.name(),
            max_memory_mb=max_kib // 1024, current_memory_mb=cur_kib // 1024,
            vcpus=vcpus, cpu_time_ns=cpu_time, memory_stats=dict(stats))

    def close(self):
        with self._lock:
            self._drop()
