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

"""Policies of /v1/audits."""
from memagg.api.policies import base

LIST = 'memagg:audit:list'
GET = 'memagg:audit:get'
CREATE = 'memagg:audit:create'
EXECUTE = 'memagg:audit:execute'

rules = [
    base.get_rule(
        LIST, base.ADMIN,
        'List consolidation audits.',
        '/v1/audits'),
    base.get_rule(
        GET, base.ADMIN,
        'Show an audit and its actions.',
        '/v1/audits/{uuid}'),
    base.rule(
        CREATE, base.ADMIN,
        'Start a consolidation round (an audit) on demand.',
        'POST', '/v1/audits'),
    base.rule(
        EXECUTE, base.ADMIN,
        'Execute a recommended audit\'s plan: live-migrate VMs through '
        'Nova and power hosts.',
        'POST', '/v1/audits/{uuid}/execute'),
]


def list_rules():
    return rules
