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

"""The Placement job: each compute node's MEMORY_MB allocation_ratio kept
in line with what its VMs really use (ARCHITECTURE.md, "Nova and
Placement").

Placement counts booked memory: a compute node takes VMs until their
flavors' RAM reaches (total - reserved) x allocation_ratio of its MEMORY_MB
inventory. memagg measures how much of it the VMs use, so memagg-scheduler,
with [placement] enabled, sets every [placement] interval seconds:

* For each host memagg-compute reported within [DEFAULT] service_down_time,
  the resource provider named like it (Nova names a compute node's provider
  after its hypervisor host name, memagg's host name).
* ratio = (1 - margin) x B / W, B the booked MiB of the host's VMs and W
  their resident MiB (WSS max-average, else WSS, else current size, as
  consolidation rounds count them), within [min_allocation_ratio,
  max_allocation_ratio], in hundredths. A host without VMs (W = 0) gets the
  operator's ratio. Never below what the provider's current allocations
  need (used / (total - reserved), rounded up), so they still fit.
* The ratio is written only when it moves by more than [placement] step
  from the one in Placement.
* Before memagg first writes a host's ratio it stores the ratio it found
  there, the operator's, in its DB; once the host stops reporting (or
  memagg's ratio for a host without VMs is the operator's again) that ratio
  is written back and the row removed. A host counts as stopped only once
  the job has been running service_down_time seconds: after a restart of
  memagg-scheduler every host looks silent until its next report. A ratio
  changed outside memagg while memagg sets it is overwritten on the next
  run, with a warning: most likely nova.conf's ram_allocation_ratio is set,
  and nova-compute writes it back on every update.
* A write answered 409 (the provider changed since it was read: an
  allocation, nova-compute's update) is done again from a fresh read, up to
  CONFLICT_RETRIES more times. Other errors of a host are logged and the
  run goes on with the next; an unreachable Placement ends the run.

Everything a run needs is in memagg's DB and Placement, so runs are
idempotent and a restart loses nothing. Only allocation_ratio is written:
reserved belongs to nova-compute ([DEFAULT] reserved_host_memory_mb), which
writes it back on every update.
"""
import datetime
import math
import struct

from keystoneauth1 import exceptions as ks_exc
from openstack import connection as sdk_connection
from openstack import exceptions as sdk_exc
from oslo_log import log as logging
from oslo_utils import timeutils

from memagg.common import exceptions
from memagg.common import keystone
from memagg.common import plugins
from memagg.common import retry
from memagg.db import hosts as db_hosts
from memagg.db import instances as db_instances
from memagg.db import placement as db_placement
from memagg.scheduler import audits

LOG = logging.getLogger(__name__)

GROUP = 'placement'
RESOURCE_CLASS = 'MEMORY_MB'
#: Writes tried again, each from a fresh read, after Placement answered 409.
CONFLICT_RETRIES = 4
#: Decimal places of the ratios memagg computes.
DECIMALS = 2
_UNIT = 10 ** DECIMALS
# Ratios closer than this are one ratio: Placement on MySQL stores them in
# a single-precision FLOAT column.
_SAME = 0.5 / _UNIT

# What openstacksdk or keystoneauth raise when a call to Placement fails.
_CALL_ERRORS = (sdk_exc.SDKException, ks_exc.ClientException)
# Failures no other host would escape: the run ends.
_UNREACHABLE = (ks_exc.ConnectionError, ks_exc.EndpointNotFound,
                ks_exc.DiscoveryFailure, ks_exc.AuthorizationFailure,
                ks_exc.Unauthorized)


def _as_stored(ratio):
    """``ratio`` as a single-precision FLOAT column gives it back."""
    return struct.unpack('f', struct.pack('f', ratio))[0]


def same_ratio(a, b):
    """Whether Placement's ``a`` and ``b`` are one ratio."""
    return abs(a - b) < _SAME


def fitting_ratio(used_mb, usable_mb):
    """The lowest ratio, in hundredths, under which Placement's capacity
    int(``usable_mb`` x ratio) still holds ``used_mb``; 0 when nothing is
    used. ``usable_mb`` (total - reserved) must be positive."""
    if used_mb <= 0:
        return 0.0
    hundredths = math.ceil(used_mb * _UNIT / usable_mb)
    while int(usable_mb * _as_stored(hundredths / _UNIT)) < used_mb:
        hundredths += 1
    return hundredths / _UNIT


def wanted_ratio(booked_mb, resident_mb, operator_ratio, margin, lowest,
                 highest):
    """The ratio a host's VMs call for: (1 - ``margin``) x booked /
    resident, in hundredths, within [``lowest``, ``highest``];
    ``operator_ratio`` for a host without resident memory."""
    if resident_mb <= 0:
        return operator_ratio
    ratio = round((1 - margin) * booked_mb / resident_mb, DECIMALS)
    return min(max(ratio, lowest), highest)


def target_ratio(booked_mb, resident_mb, operator_ratio, used_mb,
                 usable_mb, margin, lowest, highest):
    """The ratio memagg wants in Placement: :func:`wanted_ratio`, raised
    to :func:`fitting_ratio` so that the allocations there still fit."""
    return max(wanted_ratio(booked_mb, resident_mb, operator_ratio, margin,
                            lowest, highest),
               fitting_ratio(used_mb, usable_mb))


def worth_writing(current, target, step):
    """Whether ``target`` moved far enough from Placement's ``current``
    ratio: by more than ``step``, and not only by FLOAT rounding."""
    return abs(target - current) > max(step, _SAME)


def connect(conf):
    """An openstacksdk Connection to Placement from the [placement]
    options; nothing is sent before its first call. InvalidParameter
    naming the option when the credentials are missing or incomplete."""
    session = keystone.load_session(
        conf, GROUP, 'not set, but [placement] enabled = true needs '
        'Placement credentials (the admin role); set auth_type (e.g. '
        'password) and its options, or set enabled = false')
    settings = {'interface': _option(conf, 'interface')}
    endpoint = _option(conf, 'endpoint_override')
    if endpoint:
        settings['placement_endpoint_override'] = endpoint
    return sdk_connection.Connection(
        session=session, region_name=_option(conf, 'region_name'),
        app_name='memagg', **settings)


def _option(conf, name):
    return plugins.option_value(conf, GROUP, name)


def load(conf, connection=None):
    """The job when [placement] enabled is true, else None."""
    if not _option(conf, 'enabled'):
        return None
    return InventoryJob(conf, connection)


class _Skip(Exception):
    """A host the job cannot set (no provider or inventory): why."""


class _Failed(Exception):
    """A host whose write gave up: why."""


class _Unreachable(Exception):
    """Placement did not answer: the run ends."""


class InventoryJob:
    """memagg-scheduler's Placement job.

    ``connection`` (an openstack.connection.Connection) is built from the
    [placement] options when not given. Invalid options raise
    InvalidParameter naming the option.
    """

    def __init__(self, conf, connection=None):
        self.conf = conf
        self.interval = _option(conf, 'interval')
        self.margin = _option(conf, 'margin')
        self.lowest = _option(conf, 'min_allocation_ratio')
        self.highest = _option(conf, 'max_allocation_ratio')
        self.step = _option(conf, 'step')
        if self.lowest > self.highest:
            raise exceptions.InvalidParameter(
                field='[%s] max_allocation_ratio' % GROUP,
                reason='%s is below min_allocation_ratio %s; set it to at '
                       'least that' % (self.highest, self.lowest))
        self.connection = connection or connect(conf)
        #: No host is taken for stopped before service_down_time seconds
        #: after this.
        self.started_at = timeutils.utcnow()

    def run(self, context, now=None):
        """Set the ratio of every host that reports, give the operator's
        back to those that stopped. Returns {host: what was done}."""
        now = now or timeutils.utcnow()
        down_time = datetime.timedelta(seconds=self.conf.service_down_time)
        since = now - down_time
        # hosts_for_round also returns silent standby hosts: not these.
        live = [h.name for h in db_hosts.hosts_for_round(context, since)
                if h.reported_at is not None and h.reported_at >= since]
        rows = {row.host: row for row in db_placement.placement_inventories(
            context)}
        memory = {name: [0, 0] for name in live}
        for inst in db_instances.instances_on_hosts(context, live):
            memory[inst.host][0] += inst.booked_mb
            memory[inst.host][1] += audits.resident_mb(inst)
        done = {}
        try:
            for name in live:
                done[name] = self._host(
                    name, self._adjust, context, name, rows.get(name),
                    *memory[name])
            if now - self.started_at < down_time:
                return done
            for name in sorted(set(rows) - set(live)):
                done[name] = self._host(name, self._restore, context,
                                        rows[name], forget=context)
        except _Unreachable as exc:
            LOG.warning('Placement job: %s; next run in %d s', exc,
                        self.interval)
        return done

    def _host(self, name, attempt, *args, forget=None):
        """``attempt(*args, provider, inventory, used_mb)`` with a fresh
        read of ``name``'s provider, again after each 409; what it did.
        With ``forget`` (a context), a host Placement cannot set any more
        loses its row."""
        try:
            try:
                # Read again and written again at once: a 409 says the
                # provider changed since it was read.
                return retry.call(
                    lambda: attempt(*args, *self._read(name)),
                    what='Writing the %s inventory of resource provider %s'
                    % (RESOURCE_CLASS, name),
                    policy=retry.Policy(CONFLICT_RETRIES + 1, 0),
                    retry_on=sdk_exc.ConflictException)
            except sdk_exc.ConflictException:
                raise _Failed('it changed under each of %d writes (409); '
                              'the next run tries again'
                              % (CONFLICT_RETRIES + 1))
        except _Skip as exc:
            if forget is not None:
                db_placement.placement_inventory_release(forget, name)
                LOG.warning('Placement job: host %s stopped reporting and '
                            '%s; its operator\'s allocation_ratio is not '
                            'written back', name, exc)
                return 'forgotten: %s' % exc
            LOG.warning('Placement job: not setting host %s: %s', name, exc)
            return 'skipped: %s' % exc
        except _Failed as exc:
            LOG.warning('Placement job: host %s: %s', name, exc)
            return 'failed: %s' % exc
        except _UNREACHABLE as exc:
            raise _Unreachable('Placement unreachable: %s' % exc)
        except _CALL_ERRORS as exc:
            LOG.warning('Placement job: host %s: Placement: %s', name, exc)
            return 'failed: %s' % exc
        except Exception as exc:
            # One host's surprise must not stop the others'.
            LOG.exception('Placement job: host %s failed', name)
            return 'failed: %s: %s' % (type(exc).__name__, exc)

    def _read(self, name):
        """``(provider, inventory, used_mb)`` of ``name``'s provider."""
        placement = self.connection.placement
        provider = next(iter(placement.resource_providers(name=name)), None)
        if provider is None:
            raise _Skip('Placement has no resource provider named %s' % name)
        inventory = next((i for i in placement.resource_provider_inventories(
            provider) if i.resource_class == RESOURCE_CLASS), None)
        if inventory is None:
            raise _Skip('resource provider %s has no %s inventory'
                        % (provider.id, RESOURCE_CLASS))
        if inventory.total - inventory.reserved <= 0:
            raise _Skip('its %s inventory has no usable memory (total %d, '
                        'reserved %d)' % (RESOURCE_CLASS, inventory.total,
                                          inventory.reserved))
        # Read after the inventory: an allocation made since changes the
        # generation, so the write is refused (409) and read again.
        usages = placement.fetch_resource_provider_usages(provider).usages
        return provider, inventory, (usages or {}).get(RESOURCE_CLASS, 0)

    def _write(self, provider, inventory, ratio):
        # Every field is sent, as Placement resets an omitted one to its
        # default; naming the class rather than passing the inventory read
        # makes openstacksdk send them all (of a resource it read it sends
        # only what changed).
        self.connection.placement.update_resource_provider_inventory(
            RESOURCE_CLASS, provider,
            resource_provider_generation=(
                inventory.resource_provider_generation),
            total=inventory.total, reserved=inventory.reserved,
            min_unit=inventory.min_unit, max_unit=inventory.max_unit,
            step_size=inventory.step_size, allocation_ratio=ratio)

    def _adjust(self, context, name, row, booked_mb, resident_mb, provider,
                inventory, used_mb):
        current = inventory.allocation_ratio
        if (row is not None and row.applied_allocation_ratio is not None
                and not same_ratio(current, row.applied_allocation_ratio)):
            LOG.warning('Placement job: the %s allocation_ratio of host %s '
                        'was changed outside memagg from %s to %s; memagg '
                        'sets it again. If nova.conf sets '
                        'ram_allocation_ratio, unset it (nova-compute writes '
                        'it back on every update) and use '
                        'initial_ram_allocation_ratio', RESOURCE_CLASS, name,
                        row.applied_allocation_ratio, current)
        operator = current if row is None else row.original_allocation_ratio
        target = target_ratio(booked_mb, resident_mb, operator, used_mb,
                              inventory.total - inventory.reserved,
                              self.margin, self.lowest, self.highest)
        if not worth_writing(current, target, self.step):
            if row is not None and same_ratio(current, operator):
                db_placement.placement_inventory_release(context, name)
            LOG.debug('Placement job: host %s keeps allocation_ratio %s '
                      '(wanted %s)', name, current, target)
            return 'kept %s' % current
        # The operator's ratio is stored before it is overwritten.
        row = db_placement.placement_inventory_take(context, name, current)
        self._write(provider, inventory, target)
        if same_ratio(target, row.original_allocation_ratio):
            db_placement.placement_inventory_release(context, name)
        else:
            db_placement.placement_inventory_applied(context, name, target)
        LOG.info('Placement job: host %s allocation_ratio %s -> %s (booked '
                 '%d MiB, resident %d MiB, %d MiB allocated)', name,
                 current, target, booked_mb, resident_mb, used_mb)
        return 'set %s' % target

    def _restore(self, context, row, provider, inventory, used_mb):
        name = row.host
        original = row.original_allocation_ratio
        if not same_ratio(inventory.allocation_ratio, original):
            self._write(provider, inventory, original)
            usable = inventory.total - inventory.reserved
            if int(usable * original) < used_mb:
                LOG.warning('Placement job: host %s has %d MiB allocated, '
                            'more than the %d MiB its operator\'s '
                            'allocation_ratio %s allows; nothing more is '
                            'placed there until it has less', name, used_mb,
                            int(usable * original), original)
        db_placement.placement_inventory_release(context, name)
        LOG.info('Placement job: host %s stopped reporting; its operator\'s '
                 'allocation_ratio %s is back', name, original)
        return 'restored %s' % original
