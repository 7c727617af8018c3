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

"""[wss] options: the plug-ins load by name; bad values fail at start
naming the option."""
import pytest

from memagg.common import exceptions
from memagg.conf import CONF
from memagg.conf import wss as wss_conf
from memagg.drivers.wss import badis
from memagg.drivers.wss import base
from memagg.drivers.wss import sampler
from memagg.drivers.wss import stats
from memagg.drivers.wss import swap_ghost
from memagg.tests import conf_files


def test_default_is_one_badis_per_vm_with_the_spec_defaults(conf):
    factory = base.load_estimator_factory(CONF)
    first, second = factory(), factory()

    assert isinstance(first, badis.BadisEstimator)
    assert first is not second
    assert first.params == base.WssParams()
    assert (first.params.badis_close_ratio, first.params.min_margin_mb,
            first.params.ghost_bucket_mb, first.params.ghost_buckets,
            first.params.ghost_percentile) == (0.9, 64, 4, 100, 95.0)


@pytest.mark.parametrize('name, cls, needs_sampler', [
    ('stats', stats.StatsEstimator, False),
    ('sampler', sampler.SamplerEstimator, True),
    ('swap_ghost', swap_ghost.SwapGhostEstimator, False),
    ('badis', badis.BadisEstimator, True),
])
def test_each_plug_in_loads_by_name(conf, name, cls, needs_sampler):
    conf.config(estimator=name, min_margin_mb=32, group='wss')

    estimator = base.load_estimator_factory(CONF)()

    assert type(estimator) is cls and estimator.name == name
    assert estimator.params.min_margin_mb == 32
    assert estimator.needs_sampler is needs_sampler


def test_unknown_estimator_names_the_option_and_the_choices(conf):
    conf.config(estimator='vmware', group='wss')

    with pytest.raises(exceptions.InvalidParameter) as info:
        base.load_estimator_factory(CONF)

    assert info.value.kwargs['field'] == '[wss] estimator'
    assert 'badis, sampler, stats, swap_ghost' in str(info.value)


@pytest.mark.parametrize('line, option', [
    ('badis_close_ratio = 1.5', 'badis_close_ratio'),
    ('badis_close_ratio = 0', 'badis_close_ratio'),
    ('ghost_percentile = 0', 'ghost_percentile'),
    ('ghost_buckets = 0', 'ghost_buckets'),
    ('min_margin_mb = -1', 'min_margin_mb'),
    ('badis_switch_periods = zero', 'badis_switch_periods'),
])
def test_invalid_values_fail_naming_the_option(tmp_path, line, option):
    exc = conf_files.refused(tmp_path, wss_conf, line,
                             base.load_estimator_factory)

    assert exc.kwargs['field'] == '[wss] %s' % option
    assert option in str(exc)


def test_options_from_a_file_reach_the_estimator(tmp_path):
    conf = conf_files.group_from_file(
        tmp_path, wss_conf, 'grow_step_mb = 256\nbadis_close_ratio = 0.8')

    estimator = base.load_estimator_factory(conf)()

    assert estimator.params.grow_step_mb == 256
    assert estimator.params.badis_close_ratio == 0.8
