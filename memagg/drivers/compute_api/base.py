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

"""The compute API interface (Nova, as memagg sees it) and its loader.

A compute API driver answers questions about a VM that only the cloud's
compute service knows, and carries out what memagg-scheduler decides:

* For the weighted local policy (ALGORITHMS.md §2.3), the VM's QoS weight
  ``memagg:weight``: the flavor extra spec wins over the image property; a
  VM that has neither has no weight of its own and the policy gives it
  [local_policy] default_weight.
* For executing a consolidation plan (ALGORITHMS.md §3.5): live-migrate a
  VM to a named host, follow the server's state and its migration's
  progress, and enable or disable a host's compute service (memagg does not
  cut physical power: a host on standby takes no new VMs).

Errors fall into three kinds the caller treats differently: the VM or host
is unknown (InstanceNotFound, HostNotFound), the service refused the
request (ComputeApiRefused: asking again unchanged would be refused
again), or the service could not answer (ComputeApiUnavailable: asking
again later may work, except for its ComputeApiNotConfigured: the driver
in use cannot do it).
"""
import abc
import dataclasses

from memagg.common import plugins

NAMESPACE = 'memagg.compute_api'
OPTION = '[compute] compute_api_driver'

#: The flavor extra spec and image property naming a VM's QoS weight.
WEIGHT_KEY = 'memagg:weight'
#: The flavor extra spec and image property by which a VM opts out of
#: host-side reclaim ('false').
HOST_RECLAIM_KEY = 'memagg:host_reclaim'

FLAVOR = 'flavor'
IMAGE = 'image'


@dataclasses.dataclass(frozen=True)
class QosWeight:
    """A VM's ``memagg:weight`` (or another memagg setting: get_vm_setting)
    as found (a number or a class name such as gold, unparsed: the policy
    interprets it) and where it came from (FLAVOR or IMAGE); both None
    when the VM names none."""

    value: str | None = None
    source: str | None = None


NO_WEIGHT = QosWeight()


def pick_weight(extra_specs, image_properties, key=WEIGHT_KEY):
    """The QosWeight (setting ``key``) of a VM with flavor ``extra_specs``
    and image ``image_properties`` (dicts, or None when unknown): the
    flavor's wins."""
    for source, values in ((FLAVOR, extra_specs), (IMAGE, image_properties)):
        value = (values or {}).get(key)
        if value is not None and str(value).strip():
            return QosWeight(value=str(value).strip(), source=source)
    return NO_WEIGHT


@dataclasses.dataclass(frozen=True)
class ServerState:
    """A VM as the compute service last showed it.

    ``status`` is Nova's server status (ACTIVE, MIGRATING, ERROR, ...),
    ``task_state`` the task in progress (``migrating`` during a live
    migration; None when no task runs), ``host`` the compute host the VM
    runs on (None when unknown), ``vm_state`` Nova's VM state.
    """

    status: str
    task_state: str | None
    host: str | None
    vm_state: str | None = None


@dataclasses.dataclass(frozen=True)
class MigrationProgress:
    """A live migration in progress, as the compute service reports it.

    ``status`` is the service's (e.g. queued, preparing, running);
    ``bytes_processed`` the memory and disk bytes copied so far and
    ``bytes_total`` those to copy, None where the service does not say.
    """

    status: str
    bytes_processed: int | None = None
    bytes_total: int | None = None


class ComputeApiError(Exception):
    """A call to the compute service did not do what was asked."""


class InstanceNotFound(ComputeApiError):
    """The compute service does not know this VM."""


class HostNotFound(ComputeApiError):
    """The compute service knows no compute service on this host."""


class ComputeApiRefused(ComputeApiError):
    """The compute service answered and refused the request (for Nova a
    400 or 409: the VM is busy, the destination cannot take it, ...).

    The message is the service's own; ``status`` its HTTP status, if any.
    """

    def __init__(self, message, status=None):
        super().__init__(message)
        self.status = status


class ComputeApiUnavailable(ComputeApiError):
    """The compute service (or the image service) did not answer usefully:
    unreachable, refused the credentials, or failed."""


class ComputeApiNotConfigured(ComputeApiUnavailable):
    """The configured driver cannot do this at all (the none driver cannot
    migrate): asking again is useless until the configuration changes."""


class ComputeApi(metaclass=abc.ABCMeta):
    """The compute service, as memagg needs it."""

    #: The plug-in's name in the memagg.compute_api namespace.
    name = None
    #: Whether the driver live-migrates VMs (implements the methods below
    #: that execute a plan).
    executes_plans = False

    def __init__(self, conf):
        self.conf = conf

    def check_can_migrate(self, instance_uuid):
        """Raise ComputeApiNotConfigured, as live_migrate would, unless
        the driver executes plans: what must precede the migration of VM
        ``instance_uuid`` is not done for nothing."""
        if not self.executes_plans:
            raise self._cannot('live-migrate VM %s' % instance_uuid)

    def get_qos_weight(self, instance_uuid):
        """The QosWeight of VM ``instance_uuid``: its flavor's extra spec
        memagg:weight, else its image's property, else NO_WEIGHT.

        Raises InstanceNotFound when the service does not know the VM and
        ComputeApiUnavailable when it cannot say.
        """
        return self.get_vm_setting(instance_uuid, WEIGHT_KEY)

    def get_vm_setting(self, instance_uuid, key):
        """Setting ``key`` of VM ``instance_uuid`` (a QosWeight): its
        flavor's extra spec, else its image's property, else NO_WEIGHT (a
        driver that reads no flavors: the default). Raises as
        get_qos_weight."""
        return NO_WEIGHT

    # Executing a plan. A driver without these (none) cannot execute one:
    # the defaults say which option to set.

    def live_migrate(self, instance_uuid, dest_host):
        """Ask for VM ``instance_uuid`` to be live-migrated to compute host
        ``dest_host``; return once the service has accepted the request
        (the migration then runs on its own: follow it with
        get_server_state).

        Raises InstanceNotFound, ComputeApiRefused (the VM or the
        destination cannot take part now) or ComputeApiUnavailable (the
        request may or may not have been accepted).
        """
        raise self._cannot('live-migrate VM %s' % instance_uuid)

    def get_server_state(self, instance_uuid):
        """The ServerState of VM ``instance_uuid``.

        Raises InstanceNotFound or ComputeApiUnavailable.
        """
        raise self._cannot('show VM %s' % instance_uuid)

    def get_migration_progress(self, instance_uuid):
        """The MigrationProgress of VM ``instance_uuid``'s live migration
        in progress, or None when none is in progress.

        Raises InstanceNotFound or ComputeApiUnavailable.
        """
        raise self._cannot('follow VM %s\'s migration' % instance_uuid)

    def abort_live_migration(self, instance_uuid):
        """Ask the compute service to abort VM ``instance_uuid``'s live
        migration in progress; return once it accepted (the VM then goes
        back to its source on its own: follow it with get_server_state).
        Returns False when no migration of the VM was in progress.

        Raises InstanceNotFound, ComputeApiRefused (the migration cannot
        be aborted at this point) or ComputeApiUnavailable.
        """
        raise self._cannot('abort VM %s\'s migration' % instance_uuid)

    def get_migration_failure(self, instance_uuid):
        """Why the compute service says VM ``instance_uuid``'s last live
        migration failed (for Nova, the error of its newest live-migration
        action), or None when it does not say.

        Raises InstanceNotFound or ComputeApiUnavailable.
        """
        return None

    def set_host_enabled(self, host, enabled, reason=None):
        """Enable or disable the compute service of ``host``: a disabled
        one is given no new VMs. ``reason`` says why it is disabled.

        Raises HostNotFound, ComputeApiRefused or ComputeApiUnavailable.
        """
        raise self._cannot('%s host %s' % ('enable' if enabled else
                                           'disable', host))

    def _cannot(self, what):
        return ComputeApiNotConfigured(
            'the %s compute API driver cannot %s; set %s = nova and the '
            '[nova] credentials' % (self.name, what, OPTION))


def load(conf):
    """The [compute] compute_api_driver plug-in, constructed with ``conf``.

    Raises InvalidParameter naming the option when no such plug-in exists.
    """
    return plugins.load(NAMESPACE, conf.compute.compute_api_driver, OPTION,
                        'compute API driver', args=(conf,))
