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

"""The OpenStack client's plug-in for memagg: ``openstack memagg ...``.

python-openstackclient finds this module by the ``openstack.cli.extension``
entry point, adds ``--os-memagg-api-version`` to its options, and builds
the commands' client with make_client from its session.
"""
from osc_lib import utils

from memaggclient import client
from memaggclient import exceptions
from memaggclient import http

API_NAME = 'memagg'
API_VERSION_OPTION = 'os_memagg_api_version'
# The bare major version: the newest 1.x both the client and the server
# support. The OpenStack client names the command group (openstack.memagg.v1)
# after the major version, so 'latest' cannot be the default.
DEFAULT_API_VERSION = '1'
API_VERSIONS = tuple([DEFAULT_API_VERSION] + [
    '1.%d' % minor
    for minor in range(http.MIN_VERSION[1], http.MAX_VERSION[1] + 1)])


def check_api_version(check_version):
    """Refuse, in one line, a version this client does not speak; True
    tells the OpenStack client the version needs no other check."""
    if check_version not in API_VERSIONS:
        raise exceptions.UnsupportedVersion(
            '--os-memagg-api-version %s is not supported: give one of %s '
            '(%s, the default, is the newest both sides support)'
            % (check_version, ', '.join(API_VERSIONS), DEFAULT_API_VERSION))
    return True


def make_client(instance):
    """The memagg Client of the OpenStack client's ClientManager
    ``instance``: its session, region and interface, and the endpoint
    given with ``--os-endpoint`` (auth type none) or
    ``--os-memory-aggregation-endpoint-override``, if any."""
    version = instance._api_version[API_NAME]
    config = instance.get_configuration()
    endpoint = (config.get('memory_aggregation_endpoint_override')
                or config.get('auth', {}).get('endpoint'))
    return client.Client(
        instance.session,
        api_version=None if version == DEFAULT_API_VERSION else version,
        interface=instance.interface, region_name=instance.region_name,
        endpoint_override=endpoint)


def build_option_parser(parser):
    """Add ``--os-memagg-api-version`` to the OpenStack client's options."""
    parser.add_argument(
        '--os-memagg-api-version', metavar='<memagg-api-version>',
        default=utils.env('OS_MEMAGG_API_VERSION',
                          default=DEFAULT_API_VERSION),
        help='memagg API microversion, 1.0 to %s, or 1 for the newest '
             'both this client and the server support (default: '
             'OS_MEMAGG_API_VERSION or %s)'
             % (http.version_string(http.MAX_VERSION), DEFAULT_API_VERSION))
    return parser
