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

"""The default policy file Horizon reads for memagg is memagg's rules."""
import yaml

from memagg.api import policies
from memagg.dashboard import policy


def test_default_policy_file_is_up_to_date():
    assert policy.DEFAULTS.read_text() == policy.dump(), (
        'run: python -m memagg.dashboard.policy > %s' % policy.DEFAULTS)


def test_default_policy_file_has_every_rule():
    rules = {r['name']: r['check_str']
             for r in yaml.safe_load(policy.DEFAULTS.read_text())}
    assert rules == {r.name: r.check_str for r in policies.list_rules()}
    assert rules['memagg:audit:execute'] == 'rule:admin_api'
