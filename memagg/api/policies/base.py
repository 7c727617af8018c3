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

"""Rules the resource policies are written in terms of."""
from oslo_policy import policy

ADMIN = 'rule:admin_api'
ADMIN_OR_OWNER = 'rule:admin_or_owner'
PROJECT_MEMBER = 'rule:project_member'

rules = [
    policy.RuleDefault(
        'admin_api', 'role:admin',
        description='A cloud administrator.'),
    policy.RuleDefault(
        'admin_or_owner', 'role:admin or project_id:%(project_id)s',
        description='An administrator, or a user of the project that owns '
                    'the target (an instance).'),
    policy.RuleDefault(
        'project_member', 'role:admin or role:member or role:reader',
        description='Any user with a role on a project.'),
]


def rule(name, check_str, description, method, path):
    """The documented rule guarding ``method path``; memagg's rules are all
    project-scoped."""
    return policy.DocumentedRuleDefault(
        name=name, check_str=check_str, description=description,
        operations=[{'method': method, 'path': path}],
        scope_types=['project'])


def get_rule(name, check_str, description, path):
    """The documented rule guarding ``GET path``."""
    return rule(name, check_str, description, 'GET', path)


def list_rules():
    return rules
