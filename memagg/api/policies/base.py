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

"""Rules the resource policies are written in terms of.

memagg's defaults follow OpenStack's secure-RBAC personas, with
project-scoped tokens and Keystone's default roles (admin implies member,
member implies reader):

* admin (``role:admin``): a cloud administrator. Everything that shows or
  changes the infrastructure (services, hosts, the reservoir, grants,
  audits, migrations) is for this persona alone;
* project reader (``role:reader`` on the project that owns the target) and
  project member (``role:member`` on it): they read their own project's
  instances and working-set history, nothing else.

The rules of memagg 1.x, before the personas, stay registered as
deprecated aliases of the rules that replace them: with ``[oslo_policy]
enforce_new_defaults = False`` a request passes if the new or the old
default allows it.
"""
from oslo_policy import policy

ADMIN = 'rule:admin_api'
PROJECT_READER_OR_ADMIN = 'rule:project_reader_or_admin'

DEPRECATED_REASON = (
    'memagg\'s defaults now follow the secure-RBAC personas: a project\'s '
    'instances are read by that project\'s readers and members (Keystone\'s '
    'reader role, which member implies) and by administrators, no longer by '
    'a user with any role on the project')
DEPRECATED_SINCE = '2027.1'

# The defaults of memagg 1.x that the personas replace.
OLD_ADMIN_OR_OWNER = 'rule:admin_or_owner'
OLD_PROJECT_MEMBER = 'rule:project_member'

rules = [
    policy.RuleDefault(
        'admin_api', 'role:admin',
        description='The admin persona: a cloud administrator.'),
    policy.RuleDefault(
        'project_reader_api', 'role:reader and project_id:%(project_id)s',
        description='The project reader persona: a reader of the project '
                    'that owns the target.'),
    policy.RuleDefault(
        'project_member_api', 'role:member and project_id:%(project_id)s',
        description='The project member persona: a member of the project '
                    'that owns the target.'),
    # Members too, not only through Keystone's implied reader role: a
    # token with member alone (noauth, a cloud without the implication)
    # reads what the member persona may.
    policy.RuleDefault(
        'project_reader_or_admin',
        'rule:project_reader_api or rule:project_member_api or '
        'rule:admin_api',
        description='A reader or member of the project that owns the '
                    'target, or an administrator.'),
    policy.RuleDefault(
        'admin_or_owner', 'role:admin or project_id:%(project_id)s',
        description='An administrator, or a user with any role on the '
                    'project that owns the target.',
        deprecated_for_removal=True, deprecated_reason=DEPRECATED_REASON,
        deprecated_since=DEPRECATED_SINCE),
    policy.RuleDefault(
        'project_member', 'role:admin or role:member or role:reader',
        description='Any user with a role on a project.',
        deprecated_for_removal=True, deprecated_reason=DEPRECATED_REASON,
        deprecated_since=DEPRECATED_SINCE),
]


def deprecated(name, old_check_str):
    """The rule of memagg 1.x that ``name``'s new default replaces."""
    return policy.DeprecatedRule(
        name=name, check_str=old_check_str,
        deprecated_reason=DEPRECATED_REASON,
        deprecated_since=DEPRECATED_SINCE)


def rule(name, check_str, description, method, path, deprecated_rule=None):
    """The documented rule guarding ``method path`` (a path, or a tuple of
    the paths it guards); memagg's rules are all project-scoped.
    ``deprecated_rule`` is the old default it replaces."""
    paths = path if isinstance(path, tuple) else (path,)
    return policy.DocumentedRuleDefault(
        name=name, check_str=check_str, description=description,
        operations=[{'method': method, 'path': p} for p in paths],
        scope_types=['project'], deprecated_rule=deprecated_rule)


def get_rule(name, check_str, description, path, deprecated_rule=None):
    """The documented rule guarding ``GET path`` (or each of a tuple)."""
    return rule(name, check_str, description, 'GET', path, deprecated_rule)


def list_rules():
    return rules
