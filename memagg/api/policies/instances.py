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

"""Policies of /v1/instances: an instance's project's readers and
members may read it; which host runs it is for admins."""
from memagg.api.policies import base

LIST = 'memagg:instance:list'
LIST_ALL_PROJECTS = 'memagg:instance:list:all_projects'
GET = 'memagg:instance:get'
WSS = 'memagg:instance:wss'
HOST = 'memagg:instance:host'

rules = [
    base.get_rule(
        LIST, base.PROJECT_READER_OR_ADMIN,
        'List instances. Unless memagg:instance:list:'
        'all_projects also passes, only the caller\'s project\'s '
        'instances are listed.',
        '/v1/instances',
        base.deprecated(LIST, base.OLD_PROJECT_MEMBER)),
    base.get_rule(
        LIST_ALL_PROJECTS, base.ADMIN,
        'List the instances of every project.',
        '/v1/instances'),
    base.get_rule(
        GET, base.PROJECT_READER_OR_ADMIN,
        'Show an instance.',
        '/v1/instances/{uuid}',
        base.deprecated(GET, base.OLD_ADMIN_OR_OWNER)),
    base.get_rule(
        WSS, base.PROJECT_READER_OR_ADMIN,
        'List the working-set samples of an instance.',
        '/v1/instances/{uuid}/wss',
        base.deprecated(WSS, base.OLD_ADMIN_OR_OWNER)),
    base.get_rule(
        HOST, base.ADMIN,
        'See the compute host of an instance and of its working-set '
        'samples, and filter the instances listing by host. Without it '
        'the host field is left out of those bodies (as Nova keeps a '
        'server\'s host from non-admins) and a host filter is refused.',
        ('/v1/instances', '/v1/instances/{uuid}',
         '/v1/instances/{uuid}/wss')),
]


def list_rules():
    return rules
