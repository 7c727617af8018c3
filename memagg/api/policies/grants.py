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

"""Policies of /v1/grants."""
from memagg.api.policies import base

LIST = 'memagg:grant:list'
GET = 'memagg:grant:get'
CREATE = 'memagg:grant:create'
DELETE = 'memagg:grant:delete'

rules = [
    base.get_rule(
        LIST, base.ADMIN,
        'List remote-memory grants.',
        '/v1/grants'),
    base.get_rule(
        GET, base.ADMIN,
        'Show a grant and its slabs.',
        '/v1/grants/{uuid}'),
    base.rule(
        CREATE, base.ADMIN,
        'Lend remote memory to an instance: donors set up slabs and its '
        'host attaches them as a swap disk.',
        'POST', '/v1/grants'),
    base.rule(
        DELETE, base.ADMIN,
        'Release a grant: its instance\'s pages go back to its host, the '
        'donors free the memory.',
        'DELETE', '/v1/grants/{uuid}'),
]


def list_rules():
    return rules
