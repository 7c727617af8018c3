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

"""openstack memagg grant list | show | create | delete."""
import time

from osc_lib.command import command
from osc_lib import exceptions

from memaggclient.osc.v1 import base


def _uuid_argument(parser):
    parser.add_argument('uuid', metavar='<uuid>', help='Grant UUID')


class ListGrant(base.ListCommand):
    """List remote-memory grants."""

    columns = ('uuid', 'instance_uuid', 'consumer_host', 'requested_mb',
               'granted_mb', 'status')
    long_columns = ('l1_mb', 'l2_mb', 'slab_size_mb', 'partial', 'reason',
                    'created_at', 'updated_at')
    filters = ('instance_uuid', 'consumer_host', 'status')
    marker_help = 'this grant UUID (the last of the previous page)'

    def add_filters(self, parser):
        parser.add_argument('--instance', dest='instance_uuid',
                            metavar='<uuid>',
                            help='Only grants to this instance')
        parser.add_argument('--consumer-host', metavar='<host>',
                            help='Only grants to instances on this host')
        parser.add_argument('--status', metavar='<status>',
                            help='Only grants in this status (pending, '
                                 'active, releasing, released, failed)')

    def fetch(self, parsed_args, **query):
        return base.client(self).grants.list(**query)


class ShowGrant(base.ShowCommand):
    """Show a grant and its slabs."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        _uuid_argument(parser)
        return parser

    def fetch(self, parsed_args):
        return base.client(self).grants.get(parsed_args.uuid)


class CreateGrant(base.ShowCommand):
    """Lend remote memory to an instance (microversion 1.3)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--instance', required=True, metavar='<uuid>',
                            help='The instance to lend memory to')
        parser.add_argument('--size-mb', type=int, required=True,
                            metavar='<mb>',
                            help='Memory to lend, MiB (rounded up to whole '
                                 'slabs, cut to the instance\'s cap)')
        parser.add_argument('--wait', type=int, nargs='?', const=300,
                            metavar='<seconds>',
                            help='Wait until the grant is set up (active) '
                                 'or failed, at most this long (default '
                                 '300 s); fail with its reason when it '
                                 'failed. From microversion 1.10 a grant '
                                 'is set up after the answer.')
        return parser

    def fetch(self, parsed_args):
        client = base.client(self)
        grant = client.grants.create(parsed_args.instance,
                                     parsed_args.size_mb)
        if parsed_args.wait is None:
            return grant
        deadline = time.monotonic() + parsed_args.wait
        while grant['status'] == 'pending':
            if time.monotonic() >= deadline:
                raise exceptions.CommandError(
                    'grant %s is still pending after %d s; follow it with '
                    '"openstack memagg grant show %s"' % (
                        grant['uuid'], parsed_args.wait, grant['uuid']))
            # Polling the API, as "openstack server create --wait" does.
            time.sleep(1)
            grant = client.grants.get(grant['uuid'])
        if grant['status'] == 'failed':
            raise exceptions.CommandError('grant %s failed: %s' % (
                grant['uuid'], grant['reason']))
        return grant


class DeleteGrant(base.PluginCommand, command.Command):
    """Release a grant: the donors free its memory (microversion 1.3)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        _uuid_argument(parser)
        return parser

    def take_action(self, parsed_args):
        base.client(self).grants.delete(parsed_args.uuid)
