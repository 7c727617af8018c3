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

"""Policies of /v1/hosts."""
from memagg.api.policies import base

LIST = 'memagg:host:list'
GET = 'memagg:host:get'
RECLAIM = 'memagg:host:reclaim'

rules = [
    base.get_rule(
        LIST, base.ADMIN,
        'List compute hosts.',
        '/v1/hosts'),
    base.get_rule(
        GET, base.ADMIN,
        'Show a compute host.',
        '/v1/hosts/{name}'),
    base.rule(
        RECLAIM, base.ADMIN,
        'Take back memory a host lends to other hosts\' instances.',
        'POST', '/v1/hosts/{name}/reclaim'),
]


def list_rules():
    return rules
