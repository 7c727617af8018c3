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

"""Policies of /v1/migrations."""
from memagg.api.policies import base

LIST = 'memagg:migration:list'
GET = 'memagg:migration:get'
CREATE = 'memagg:migration:create'

rules = [
    base.get_rule(
        LIST, base.ADMIN,
        'List migrations memagg asked for.',
        '/v1/migrations'),
    base.get_rule(
        GET, base.ADMIN,
        'Show a migration.',
        '/v1/migrations/{uuid}'),
    base.rule(
        CREATE, base.ADMIN,
        'Live-migrate an instance to a named host, executed as a '
        'one-action plan.',
        'POST', '/v1/migrations'),
]


def list_rules():
    return rules
