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

"""[reservoir] remote budget options: the plug-ins load by name; bad
values fail at start naming the option."""
import pytest

from memagg.conf import CONF
from memagg.conf import reservoir as reservoir_conf
from memagg.drivers.remote_budget import base
from memagg.drivers.remote_budget import fixed
from memagg.drivers.remote_budget import tlp
from memagg.tests import conf_files


def test_default_is_fixed_with_the_documented_parameters(conf):
    policy = base.load(CONF)

    assert isinstance(policy, fixed.FixedBudget)
    assert policy.params == base.BudgetParams(tlp_step_percent=2.0,
                                              tlp_slack_threshold=0.25)


def test_options_from_a_file_reach_tlp(tmp_path):
    conf = conf_files.group_from_file(
        tmp_path, reservoir_conf, 'remote_budget = tlp\n'
        'tlp_step_percent = 5\ntlp_slack_threshold = 0.5')

    policy = base.load(conf)

    assert isinstance(policy, tlp.TlpBudget) and policy.name == 'tlp'
    assert policy.params == base.BudgetParams(tlp_step_percent=5.0,
                                              tlp_slack_threshold=0.5)


def test_unknown_policy_names_the_option_and_the_choices(tmp_path):
    exc = conf_files.refused(tmp_path, reservoir_conf, 'remote_budget = tcp',
                             base.load)

    assert exc.kwargs['field'] == '[reservoir] remote_budget'
    assert 'fixed, tlp' in str(exc)


@pytest.mark.parametrize('line, option', [
    ('tlp_step_percent = 0', 'tlp_step_percent'),
    ('tlp_step_percent = 150', 'tlp_step_percent'),
    ('tlp_step_percent = two', 'tlp_step_percent'),
    ('tlp_slack_threshold = 1.5', 'tlp_slack_threshold'),
    ('tlp_slack_threshold = -0.1', 'tlp_slack_threshold'),
])
def test_invalid_values_fail_naming_the_option(tmp_path, line, option):
    exc = conf_files.refused(tmp_path, reservoir_conf, line, base.load)

    assert exc.kwargs['field'] == '[reservoir] %s' % option
    assert str(exc).startswith("Invalid value for '[reservoir] %s'" % option)
