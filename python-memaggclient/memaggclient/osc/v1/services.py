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

"""openstack memagg service list."""
from memaggclient.osc.v1 import base


class ListService(base.ListCommand):
    """List memagg's services and whether each is up."""

    columns = ('id', 'host', 'binary', 'topic', 'state', 'disabled',
               'last_seen_at')
    long_columns = ('report_count', 'created_at', 'updated_at')
    filters = ('host', 'binary', 'disabled')
    marker_help = 'this service id (the last of the previous page)'

    def add_filters(self, parser):
        parser.add_argument('--host', metavar='<host>',
                            help='Only services on this host')
        parser.add_argument('--binary', metavar='<binary>',
                            help='Only this binary, e.g. memagg-compute')
        enabled = parser.add_mutually_exclusive_group()
        enabled.add_argument('--disabled', action='store_true', default=None,
                             help='Only disabled services')
        enabled.add_argument('--enabled', dest='disabled',
                             action='store_false', default=None,
                             help='Only enabled services')

    def fetch(self, parsed_args, **query):
        return base.client(self).services.list(**query)
