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

"""[reservoir] tier options: the plug-in loads by name; bad values fail at
start naming the option."""
import pytest

from memagg.conf import CONF
from memagg.conf import reservoir as reservoir_conf
from memagg.drivers.tiers import base
from memagg.drivers.tiers import watermarks
from memagg.tests import conf_files


def test_default_is_watermarks_with_the_documented_parameters(conf):
    policy = base.load(CONF)

    assert isinstance(policy, watermarks.Watermarks)
    assert policy.params == base.TierParams(
        tier_high_watermark=1.0, tier_low_watermark=0.75,
        tier_batch_slabs=8)
    assert CONF.reservoir.tier_interval == 30


def test_options_from_a_file_reach_the_policy(tmp_path):
    conf = conf_files.group_from_file(
        tmp_path, reservoir_conf, 'tier_high_watermark = 0.9\n'
        'tier_low_watermark = 0.5\ntier_batch_slabs = 2')

    assert base.load(conf).params == base.TierParams(
        tier_high_watermark=0.9, tier_low_watermark=0.5,
        tier_batch_slabs=2)


def test_unknown_policy_names_the_option_and_the_choices(tmp_path):
    exc = conf_files.refused(tmp_path, reservoir_conf,
                             'tier_policy = lru', base.load)

    assert exc.kwargs['field'] == '[reservoir] tier_policy'
    assert 'use one of watermarks' in str(exc)


@pytest.mark.parametrize('lines, option', [
    ('tier_high_watermark = 0', 'tier_high_watermark'),
    ('tier_high_watermark = 1.5', 'tier_high_watermark'),
    ('tier_low_watermark = -0.1', 'tier_low_watermark'),
    ('tier_high_watermark = 0.5\ntier_low_watermark = 0.6',
     'tier_low_watermark'),
    ('tier_batch_slabs = 0', 'tier_batch_slabs'),
    ('tier_batch_slabs = many', 'tier_batch_slabs'),
])
def test_invalid_values_fail_naming_the_option(tmp_path, lines, option):
    exc = conf_files.refused(tmp_path, reservoir_conf, lines, base.load)

    assert exc.kwargs['field'] == '[reservoir] %s' % option
    assert str(exc).startswith("Invalid value for '[reservoir] %s'" % option)
