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

"""openstack memagg instance list | show, instance wss list."""
from memaggclient.osc.v1 import base


class ListInstance(base.ListCommand):
    """List instances and their memory (a non-admin sees its project's)."""

    columns = ('uuid', 'name', 'host', 'project_id', 'status', 'booked_mb',
               'current_mb', 'wss_mb')
    long_columns = ('target_mb', 'wss_maxavg_mb', 'remote_mb', 'estimator',
                    'local_policy', 'sampler_backend', 'sampler_error_mb',
                    'warming', 'reclaimed_mb', 'promotion_rate',
                    'promotion_slo', 'reclaim_mechanism', 'cpu_util',
                    'created_at', 'updated_at')
    filters = ('host', 'project_id', 'status')
    marker_help = 'this instance UUID (the last of the previous page)'

    def add_filters(self, parser):
        parser.add_argument('--host', metavar='<host>',
                            help='Only instances on this host')
        parser.add_argument('--project', dest='project_id',
                            metavar='<project-id>',
                            help='Only instances of this project (ID)')
        parser.add_argument('--status', metavar='<status>',
                            help='Only instances with this status')

    def fetch(self, parsed_args, **query):
        return base.client(self).instances.list(**query)


class ShowInstance(base.ShowCommand):
    """Show an instance's memory: booked, current, target, working set,
    remote, host reclaim."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('uuid', metavar='<uuid>', help='Instance UUID')
        return parser

    def fetch(self, parsed_args):
        return base.client(self).instances.get(parsed_args.uuid)


class ListInstanceWss(base.ListCommand):
    """List an instance's working-set samples, oldest first."""

    columns = ('id', 'sampled_at', 'host', 'wss_mb', 'wss_maxavg_mb',
               'current_mb', 'target_mb', 'estimator')
    long_columns = ('sampler_backend', 'sampler_error_mb', 'sampler_pages',
                    'warming', 'reclaimed_mb', 'promotion_rate')
    filters = ('since', 'until')
    marker_help = 'this sample id (the last of the previous page)'

    def add_filters(self, parser):
        parser.add_argument('uuid', metavar='<uuid>', help='Instance UUID')
        parser.add_argument('--since', metavar='<time>',
                            help='Only samples taken at or after this ISO '
                                 '8601 time')
        parser.add_argument('--until', metavar='<time>',
                            help='Only samples taken at or before this ISO '
                                 '8601 time')

    def fetch(self, parsed_args, **query):
        return base.client(self).instances.wss(parsed_args.uuid, **query)
