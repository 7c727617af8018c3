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

"""The ``nova`` compute API driver: Nova and Glance through openstacksdk.

A VM's weight comes from one GET /servers/{id}: from microversion 2.47 Nova
embeds the flavor, extra specs included, in the server (openstacksdk
negotiates the highest microversion both sides know). Only when the flavor
names no weight is the image's properties asked from Glance
(GET /v2/images/{id}). The connection authenticates with the [nova]
keystoneauth1 options and finds both endpoints in the Keystone catalog
([nova] region_name, interface; endpoint_override replaces Nova's).

Executing a consolidation plan uses, with an admin account:

* POST /servers/{id}/action ``os-migrateLive`` at microversion 2.30
  (openstacksdk's choice): the named destination is still checked by
  Nova's scheduler (no ``force``) and ``block_migration`` is ``auto``, so
  Nova decides between shared and block storage; the request is answered
  once Nova's pre-checks passed, so a destination that cannot take the VM
  is refused (400) at once.
* GET /servers/{id} for status, OS-EXT-STS:task_state and
  OS-EXT-SRV-ATTR:host (admin fields), and GET /servers/{id}/migrations
  (2.23+) for the bytes a migration in progress has copied.
* DELETE /servers/{id}/migrations/{migration id} (2.24+; 2.65+ also
  aborts a migration still queued or preparing) to abort a live migration
  past memagg's timeout.
* GET /servers/{id}/os-instance-actions and the newest live-migration
  action's events (2.84+ for their ``details``): why Nova ended a live
  migration with the VM still on its source (for instance "No valid host
  was found", from the scheduler that checks the destination).
* GET /os-services?host=...&binary=nova-compute, then
  PUT /os-services/{id} (2.53+, services named by id) with the status and
  the disabled reason.
"""
from keystoneauth1 import exceptions as ks_exc
from openstack import connection
from openstack import exceptions as sdk_exc
from openstack import utils as sdk_utils
from oslo_log import log as logging

from memagg.common import keystone
from memagg.drivers.compute_api import base

LOG = logging.getLogger(__name__)

GROUP = 'nova'
# What keystoneauth or openstacksdk raise when a call fails.
_CALL_ERRORS = (sdk_exc.SDKException, ks_exc.ClientException)

COMPUTE_BINARY = 'nova-compute'
# Live migration to a named host that Nova's scheduler still checks, with
# block_migration 'auto' (2.25+) and no forcing (2.30+).
LIVE_MIGRATE_VERSION = '2.30'
# GET /servers/{id}/migrations: a migration in progress and its bytes.
MIGRATIONS_VERSION = '2.23'
# DELETE /servers/{id}/migrations/{migration id}.
ABORT_VERSION = '2.24'
# The live-migration action Nova records for each request.
LIVE_MIGRATION_ACTION = 'live-migration'
# A service named by its id and updated with its reason in one PUT.
SERVICES_VERSION = '2.53'
_UNSET_AUTH = ('not set, but %s = nova needs Nova credentials; set '
               'auth_type (e.g. password) and its options, or use the none '
               'driver' % base.OPTION)
_NOVA_TOO_OLD = ('Nova does not offer microversion %s, which %s needs; '
                 'memagg needs Nova 16 (Pike) or later')


class NovaComputeApi(base.ComputeApi):
    """Reads VMs' flavors and images from Nova and Glance."""

    name = 'nova'
    executes_plans = True

    def __init__(self, conf):
        super().__init__(conf)
        group = conf[GROUP]
        session = keystone.load_session(conf, GROUP, _UNSET_AUTH)
        settings = {'interface': group.interface}
        if group.endpoint_override:
            settings['compute_endpoint_override'] = group.endpoint_override
        # Nothing is sent yet: openstacksdk authenticates and discovers the
        # endpoints on the first call, so a Nova down at start is no error.
        self.connection = connection.Connection(
            session=session, region_name=group.region_name,
            app_name='memagg', **settings)

    def get_vm_setting(self, instance_uuid, key):
        try:
            server = self.connection.compute.get_server(instance_uuid)
        except sdk_exc.NotFoundException:
            raise base.InstanceNotFound('Nova has no server %s'
                                        % instance_uuid)
        except _CALL_ERRORS as exc:
            raise base.ComputeApiUnavailable('Nova: %s' % exc)
        flavor = server.flavor
        if flavor is None or flavor.original_name is None:
            raise base.ComputeApiUnavailable(
                'Nova answered below microversion 2.47, without the '
                'server\'s flavor extra specs; memagg needs Nova 16 (Pike) '
                'or later')
        weight = base.pick_weight(flavor.extra_specs, None, key)
        if weight.value is not None:
            return weight
        image_id = server.image.id if server.image else None
        return base.pick_weight(None, self._image_properties(image_id), key)

    def _image_properties(self, image_id):
        """The image's properties from Glance; None for a VM booted from a
        volume or whose image was deleted since."""
        if not image_id:
            return None
        try:
            image = self.connection.image.get_image(image_id)
        except sdk_exc.NotFoundException:
            LOG.debug('Glance has no image %s any more', image_id)
            return None
        except _CALL_ERRORS as exc:
            raise base.ComputeApiUnavailable('Glance: %s' % exc)
        return image.properties

    def live_migrate(self, instance_uuid, dest_host):
        self._require(LIVE_MIGRATE_VERSION, 'live migration to a named '
                      'host checked by the scheduler')
        self._call('live-migrate server %s to %s' % (instance_uuid,
                                                     dest_host),
                   lambda compute: compute.live_migrate_server(
                       instance_uuid, host=dest_host, force=False,
                       block_migration='auto'), not_found=instance_uuid)

    def get_server_state(self, instance_uuid):
        server = self._call('show server %s' % instance_uuid,
                            lambda compute: compute.get_server(
                                instance_uuid), not_found=instance_uuid)
        return base.ServerState(status=server.status,
                                task_state=server.task_state,
                                host=server.compute_host,
                                vm_state=server.vm_state)

    def get_migration_progress(self, instance_uuid):
        if not self._supports(MIGRATIONS_VERSION):
            return None
        migrations = self._call(
            'list the migrations of server %s' % instance_uuid,
            lambda compute: list(compute.server_migrations(instance_uuid)),
            not_found=instance_uuid)
        # Nova lists only the migrations in progress, one at most.
        for migration in migrations:
            return base.MigrationProgress(
                status=migration.status,
                bytes_processed=_add(migration.memory_processed_bytes,
                                     migration.disk_processed_bytes),
                bytes_total=_add(migration.memory_total_bytes,
                                 migration.disk_total_bytes))
        return None

    def abort_live_migration(self, instance_uuid):
        self._require(ABORT_VERSION, 'aborting a live migration')
        migrations = self._call(
            'list the migrations of server %s' % instance_uuid,
            lambda compute: list(compute.server_migrations(instance_uuid)),
            not_found=instance_uuid)
        # Nova lists only the migrations in progress, one at most.
        for migration in migrations:
            self._call('abort migration %s of server %s' % (
                migration.id, instance_uuid),
                lambda compute: compute.abort_server_migration(
                    migration, instance_uuid), not_found=instance_uuid)
            return True
        return False

    def get_migration_failure(self, instance_uuid):
        what = 'list the actions of server %s' % instance_uuid
        actions = self._call(what, lambda compute: list(
            compute.server_actions(instance_uuid)), not_found=instance_uuid)
        migrations = [a for a in actions
                      if a.action == LIVE_MIGRATION_ACTION]
        if not migrations:
            return None
        newest = max(migrations, key=lambda a: a.start_time or '')
        action = self._call(what, lambda compute: compute.get_server_action(
            newest.request_id, instance_uuid), not_found=instance_uuid)
        for event in action.events or ():
            if event.result == 'Error':
                # details (2.84+) is Nova's message; older Novas say only
                # which step failed.
                return '%s: %s' % (event.event, event.details
                                   or 'failed')
        return None

    def set_host_enabled(self, host, enabled, reason=None):
        self._require(SERVICES_VERSION, 'enabling a compute service by id')
        what = '%s the %s service of host %s' % (
            'enable' if enabled else 'disable', COMPUTE_BINARY, host)
        services = self._call(what, lambda compute: list(compute.services(
            host=host, binary=COMPUTE_BINARY)))
        # Nova filters on host as it stores it; keep exact matches only.
        services = [s for s in services if s.host == host]
        if not services:
            raise base.HostNotFound('Nova has no %s service on host %s'
                                    % (COMPUTE_BINARY, host))
        attrs = {'status': 'enabled' if enabled else 'disabled'}
        if not enabled and reason:
            attrs['disabled_reason'] = reason
        self._call(what, lambda compute: compute.update_service(
            services[0], **attrs))

    def _supports(self, version):
        """Whether Nova offers microversion ``version`` (asked once, then
        cached by keystoneauth)."""
        try:
            return sdk_utils.supports_microversion(self.connection.compute,
                                                   version)
        except _CALL_ERRORS as exc:
            raise base.ComputeApiUnavailable('Nova: %s' % exc)

    def _require(self, version, what):
        """ComputeApiRefused unless Nova offers microversion ``version``."""
        if not self._supports(version):
            raise base.ComputeApiRefused(_NOVA_TOO_OLD % (version, what))

    def _call(self, what, func, not_found=None):
        """``func(compute proxy)``, with openstacksdk's errors (finding the
        proxy's endpoint included) mapped to the interface's: 404 is
        InstanceNotFound (``not_found`` names the server) or HostNotFound;
        another 4xx but 401 is ComputeApiRefused carrying Nova's message;
        the rest is ComputeApiUnavailable."""
        try:
            return func(self.connection.compute)
        except sdk_exc.NotFoundException as exc:
            if not_found is not None:
                raise base.InstanceNotFound('Nova has no server %s'
                                            % not_found)
            raise base.HostNotFound('Nova could not %s: %s'
                                    % (what, _nova_message(exc)))
        except sdk_exc.HttpException as exc:
            status = exc.status_code or 0
            if 400 <= status < 500 and status != 401:
                raise base.ComputeApiRefused(
                    'Nova refused to %s (%d): %s'
                    % (what, status, _nova_message(exc)), status=status)
            raise base.ComputeApiUnavailable('Nova: %s' % exc)
        except _CALL_ERRORS as exc:
            raise base.ComputeApiUnavailable('Nova: %s' % exc)


def _nova_message(exc):
    """The message in Nova's error body, else openstacksdk's text."""
    return (exc.details or str(exc)).strip()


def _add(*counts):
    """The sum of the counts Nova gave; None when it gave none."""
    known = [c for c in counts if c is not None]
    return sum(known) if known else None
