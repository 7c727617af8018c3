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

"""openstack memagg migration list | show | create."""
from memaggclient.osc.v1 import base


class ListMigration(base.ListCommand):
    """List the live migrations memagg asked Nova for."""

    columns = ('uuid', 'instance_uuid', 'source_host', 'dest_host',
               'status', 'attempts')
    long_columns = ('bytes_transferred', 'duration_s', 'downtime_ms',
                    'remote_share', 'remote_mb', 'local_copy_left_mb',
                    'error', 'created_at', 'updated_at')
    filters = ('instance_uuid', 'source_host', 'dest_host', 'status',
               'since', 'until')
    marker_help = 'this migration UUID (the last of the previous page)'

    def add_filters(self, parser):
        parser.add_argument('--instance', dest='instance_uuid',
                            metavar='<uuid>',
                            help='Only migrations of this instance')
        parser.add_argument('--source-host', metavar='<host>',
                            help='Only migrations from this host')
        parser.add_argument('--dest-host', metavar='<host>',
                            help='Only migrations to this host')
        parser.add_argument('--status', metavar='<status>',
                            help='Only migrations in this status')
        parser.add_argument('--since', metavar='<time>',
                            help='Only migrations created at or after this '
                                 'ISO 8601 time')
        parser.add_argument('--until', metavar='<time>',
                            help='Only migrations created at or before '
                                 'this ISO 8601 time')

    def fetch(self, parsed_args, **query):
        return base.client(self).migrations.list(**query)


class ShowMigration(base.ShowCommand):
    """Show a migration and what it cost."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('uuid', metavar='<uuid>', help='Migration UUID')
        return parser

    def fetch(self, parsed_args):
        return base.client(self).migrations.get(parsed_args.uuid)


class CreateMigration(base.ShowCommand):
    """Live-migrate an instance to a host; memagg-scheduler runs it as a
    one-action plan through the compute API (microversion 1.4)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('instance', metavar='<instance>',
                            help='UUID of the instance to move')
        parser.add_argument('--dest-host', required=True, metavar='<host>',
                            help='The host to move it to (active, not the '
                                 'one it is on)')
        return parser

    def fetch(self, parsed_args):
        return base.client(self).migrations.create(parsed_args.instance,
                                                   parsed_args.dest_host)
