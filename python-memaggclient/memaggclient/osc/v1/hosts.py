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

"""openstack memagg host list | show | reclaim."""
from memaggclient.osc.v1 import base


class ListHost(base.ListCommand):
    """List compute hosts: memory, CPU, state, reservoir."""

    columns = ('name', 'state', 'memory_mb', 'reserved_mb', 'vcpus',
               'cpu_util', 'free_reservoir_mb', 'lendable_mb')
    long_columns = ('reported_at', 'created_at', 'updated_at')
    filters = ('state',)
    marker_help = 'this host name (the last of the previous page)'

    def add_filters(self, parser):
        parser.add_argument('--state', metavar='<state>',
                            help='Only hosts in this state (active, '
                                 'standby)')

    def fetch(self, parsed_args, **query):
        return base.client(self).hosts.list(**query)


class ShowHost(base.ShowCommand):
    """Show a compute host."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('name', metavar='<name>', help='Host name')
        return parser

    def fetch(self, parsed_args):
        return base.client(self).hosts.get(parsed_args.name)


class ReclaimHost(base.ShowCommand):
    """Take back memory a host lends (whole slabs, newest grants first;
    microversion 1.3)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('name', metavar='<name>', help='Host name')
        parser.add_argument('--size-mb', type=int, required=True,
                            metavar='<mb>', help='Memory to take back, MiB')
        return parser

    def fetch(self, parsed_args):
        reclaimed = base.client(self).hosts.reclaim(parsed_args.name,
                                                    parsed_args.size_mb)
        return {'host': parsed_args.name, 'reclaimed_mb': reclaimed}
