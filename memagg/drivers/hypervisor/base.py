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

"""The hypervisor driver interface memagg-compute reads its host through."""
import abc
import dataclasses

from memagg.common import plugins

NAMESPACE = 'memagg.hypervisor'


@dataclasses.dataclass
class HostInfo:
    """The hypervisor host. Memory in MiB; CPU time in nanoseconds since
    boot summed over all CPUs (None when the hypervisor does not say).
    """

    hostname: str
    memory_mb: int
    free_memory_mb: int
    vcpus: int
    cpu_busy_ns: int | None = None
    cpu_total_ns: int | None = None


@dataclasses.dataclass
class DomainInfo:
    """One running guest. Memory in MiB; ``memory_stats`` is the balloon
    driver's statistics in KiB as libvirt names them (empty when the guest
    has no balloon statistics). ``balloon``: whether the guest has a balloon
    device at all; ``stats_period``: its statistics period in seconds (0:
    none set).
    """

    uuid: str
    name: str
    max_memory_mb: int
    current_memory_mb: int
    vcpus: int
    cpu_time_ns: int
    memory_stats: dict = dataclasses.field(default_factory=dict)
    balloon: bool = True
    stats_period: int = 0


@dataclasses.dataclass
class GuestMemory:
    """Where a guest's RAM lives in its hypervisor process: ``length`` bytes
    from virtual address ``start`` in process ``pid``. ``method`` says how
    it was found."""

    pid: int
    start: int
    length: int
    method: str


SWAP_SERIAL_PREFIX = 'memagg-swap-'


@dataclasses.dataclass
class MigrationStats:
    """What the hypervisor says a completed live migration cost (None
    where it does not say)."""

    memory_bytes: int | None = None     # guest memory copied
    data_bytes: int | None = None       # everything sent: memory, devices
    time_ms: int | None = None          # from start to end
    downtime_ms: int | None = None      # the guest paused for the switch


def swap_serial(grant_uuid):
    """The serial of grant ``grant_uuid``'s disk: 'memagg-swap-' and the
    uuid's first 8 hex digits (virtio-blk serials hold 20 bytes)."""
    return SWAP_SERIAL_PREFIX + grant_uuid.replace('-', '')[:8].lower()


class DomainGone(Exception):
    """The domain disappeared (destroyed, undefined) while memagg used it."""


class HypervisorUnavailable(Exception):
    """The hypervisor does not answer now (its daemon is down or
    restarting); the next call tries again."""


class Unsupported(Exception):
    """The hypervisor cannot do this for this domain; the message says
    why."""


class HypervisorDriver(metaclass=abc.ABCMeta):
    """What memagg-compute needs from a hypervisor."""

    @abc.abstractmethod
    def get_host_info(self):
        """Return the host's HostInfo."""

    @abc.abstractmethod
    def list_domains(self):
        """Return a DomainInfo for each running guest.

        A guest that disappears while it is being read is left out.
        """

    def guest_memory(self, uuid):
        """Return the GuestMemory of running domain ``uuid``.

        Raises DomainGone, or Unsupported when it cannot be found.
        """
        raise Unsupported('%s cannot locate guest memory'
                          % type(self).__name__)

    def set_stats_period(self, uuid, seconds):
        """Make the guest's balloon driver refresh its statistics every
        ``seconds`` s (live). Raises DomainGone or Unsupported."""
        raise Unsupported('%s has no balloon statistics'
                          % type(self).__name__)

    def set_balloon(self, uuid, target_mb):
        """Move the running guest's balloon so it has ``target_mb`` MiB
        (live only). Raises DomainGone or Unsupported."""
        raise Unsupported('%s cannot move balloons' % type(self).__name__)

    def attach_swap_disk(self, uuid, socket_path, export_name, serial,
                         reconnect_delay=0):
        """Hot-plug NBD export ``export_name`` served on unix socket
        ``socket_path`` into running domain ``uuid`` as a virtio disk with
        ``serial`` (kept in the domain's persistent definition too, when it
        has one). Return its target device (e.g. 'vdb'). A disk with that
        serial already there is not plugged twice: its target is returned.
        On a broken connection the hypervisor holds the disk's I/O for
        ``reconnect_delay`` seconds (0: not at all) while it reconnects,
        and pauses the domain on the disk's errors rather than passing
        them to the guest. Raises DomainGone or Unsupported."""
        raise Unsupported('%s cannot hot-plug disks' % type(self).__name__)

    def resume_after_swap_error(self, uuid, serials):
        """Resume domain ``uuid`` when it is paused on I/O errors of its
        disks with ``serials`` only (their server was away); return
        whether it was. Raises DomainGone or Unsupported."""
        raise Unsupported('%s has no paused domains' % type(self).__name__)

    def detach_swap_disk(self, uuid, serial):
        """Remove the disk with ``serial`` from domain ``uuid``: live when
        it runs, and from its persistent definition. Return whether a disk
        was found. Raises DomainGone or Unsupported."""
        raise Unsupported('%s cannot unplug disks' % type(self).__name__)

    def migration_stats(self, uuid):
        """Return the MigrationStats of the last live migration of domain
        ``uuid`` that completed on this host (source or destination), or
        None when the hypervisor kept none. Raises DomainGone or
        Unsupported."""
        raise Unsupported('%s keeps no migration statistics'
                          % type(self).__name__)

    def close(self):
        """Release the connection to the hypervisor."""


def load(name, uri):
    """The driver plug-in ``name`` of namespace memagg.hypervisor.

    Raises InvalidParameter naming [compute] hypervisor_driver when no
    plug-in has that name.
    """
    return plugins.load(NAMESPACE, name, '[compute] hypervisor_driver',
                        'hypervisor driver', args=(uri,))
