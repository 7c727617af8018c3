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

"""memagg's policies as Horizon checks them.

Horizon decides what to show (a panel, the Execute button) with
``openstack_auth.policy``: per service, the default rules of a YAML file
named in DEFAULT_POLICY_FILES and an operator's overrides in POLICY_FILES,
the way it holds Nova's and Keystone's. memagg's defaults live in code
(memagg.api.policies); ``DEFAULTS`` is that file, written from them by
``python -m memagg.dashboard.policy`` (a unit test keeps it in step).
The API checks every call again, so a stale copy can only hide or show a
button, never allow an action.
"""
import pathlib
import sys

import yaml

from memagg.api import policies

SCOPE = 'memory-aggregation'
DEFAULTS = (pathlib.Path(__file__).parent / 'conf' /
            'memagg_default_policies.yaml')
# Operators' overrides: the same file memagg-api reads, copied beside
# Horizon's other policy files (POLICY_FILES_PATH).
OVERRIDES = 'memagg_policy.yaml'


def default_rules():
    """memagg's default rules in the form of Horizon's default policy
    files (openstack_auth.policy._load_default_rules)."""
    return [{'name': rule.name, 'check_str': rule.check_str,
             'description': rule.description,
             'scope_types': rule.scope_types}
            for rule in policies.list_rules()]


def dump():
    """The text of DEFAULTS."""
    return ('# Generated from memagg.api.policies by\n'
            '# python -m memagg.dashboard.policy; do not edit.\n' +
            yaml.safe_dump(default_rules(), sort_keys=False))


if __name__ == '__main__':
    sys.stdout.write(dump())
