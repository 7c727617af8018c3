"""The ``nova`` compute API driver: Nova and Glance through openstacksdk.

A VM's weight comes from one GET /servers/{id}: from microversion 2.47 Nova
embeds the flavor, extra specs included, in the server (openstacksdk
negotiates the highest microversion both sides know). Only when the flavor
names no weight is the image's properties asked from Glance
(GET /v2/images/{id}). The connection authenticates with the [nova]
keystoneauth1 options and finds both endpoints in the Keystone catalog
([nova] region_name, interface; endpoint_override replaces Nova's).
"""
from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading
from openstack import connection
from openstack import exceptions as sdk_exc
from oslo_log import log as logging

from memagg.common import exceptions
from memagg.drivers.compute_api import base

LOG = logging.getLogger(__name__)

GROUP = 'nova'
# What keystoneauth or openstacksdk raise when a call fails.
_CALL_ERRORS = (sdk_exc.SDKException, ks_exc.ClientException)


def _auth(conf):
    """The [nova] auth plug-in; InvalidParameter naming the option when
    it is missing or incomplete, so memagg-compute fails at start."""
    try:
        auth = ks_loading.load_auth_from_conf_options(conf, GROUP)
    except ks_exc.NoMatchingPlugin as exc:
        raise exceptions.InvalidParameter(
            field='[%s] auth_type' % GROUP,
            reason='%s; use a keystoneauth1 plug-in name such as password'
            % exc)
    except ks_exc.MissingRequiredOptions as exc:
        names = ', '.join('[%s] %s' % (GROUP, opt.dest)
                          for opt in exc.options)
        raise exceptions.InvalidParameter(
            field=names, reason='required by auth_type %s; set it'
            % conf[GROUP].auth_type)
    if auth is None:
        raise exceptions.InvalidParameter(
            field='[%s] auth_type' % GROUP,
            reason='not set, but %s = nova needs Nova credentials; set '
                   'auth_type (e.g. password) and its options, or use the '
                   'none driver' % base.OPTION)
    return auth


class NovaComputeApi(base.ComputeApi):
    """Reads VMs' flavors and images from Nova and Glance."""

    name = 'nova'

    def __init__(self, conf):
        super().__init__(conf)
        group = conf[GROUP]
        session = ks_loading.load_session_from_conf_options(
            conf, GROUP, auth=_auth(conf))
        settings = {'interface': group.interface}
        if group.endpoint_override:
            settings['compute_endpoint_override'] = group.endpoint_override
        # Nothing is sent yet: openstacksdk authenticates and discovers the
        # endpoints on the first call, so a Nova down at start is no error.
        self.connection = connection.Connection(
            session=session, region_name=group.region_name,
            app_name='memagg', **settings)

    def get_qos_weight(self, instance_uuid):
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
        weight = base.pick_weight(flavor.extra_specs, None)
        if weight.value is not None:
            return weight
        image_id = server.image.id if server.image else None
        return base.pick_weight(None, self._image_properties(image_id))

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
