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

"""[local_policy] options: the plug-ins load by name with the spec's
defaults; bad values fail at start naming the option."""
import pytest

from memagg.common import exceptions
from memagg.conf import CONF
from memagg.conf import local_policy as local_policy_conf
from memagg.drivers.local import base
from memagg.drivers.local import cmms
from memagg.drivers.local import idle_tax
from memagg.drivers.local import weighted
from memagg.tests import conf_files


def test_default_is_cmms_with_the_spec_defaults():
    policy = base.load_policy(CONF)

    assert isinstance(policy, cmms.CmmsPolicy)
    assert policy.params == base.PolicyParams()
    params = policy.params
    assert (params.share_policy, params.tau, params.tau_free_mb,
            params.tau_decay, params.reclaim_chunk_mb, params.min_guest_mb,
            params.deadband_mb, params.max_step_mb) == (
        'equal', 0.75, 128, 10.0, 50, 256, 10, 512)
    assert params.weights == {'gold': 4.0, 'silver': 2.0, 'bronze': 1.0}


@pytest.mark.parametrize('name, cls', [
    ('cmms', cmms.CmmsPolicy),
    ('idle_tax', idle_tax.IdleTaxPolicy),
    ('weighted', weighted.WeightedPolicy),
])
def test_each_plug_in_loads_by_name(conf, name, cls):
    conf.config(policy=name, weights={'gold': '8', 'lead': '0.5'},
                group='local_policy')

    policy = base.load_policy(CONF)

    assert type(policy) is cls and policy.name == name
    assert policy.params.weights == {'gold': 8.0, 'lead': 0.5}


@pytest.mark.parametrize('name, mode, label', [
    ('cmms', {'share_policy': 'proportional'}, 'cmms/proportional'),
    ('idle_tax', {'tau_mode': 'static'}, 'idle_tax/static'),
    ('weighted', {'share_policy': 'proportional'}, 'weighted'),
])
def test_the_label_names_the_plug_in_and_the_mode_it_runs(
        conf, name, mode, label):
    conf.config(policy=name, group='local_policy', **mode)

    assert base.load_policy(CONF).label == label


def test_unknown_policy_names_the_option_and_the_choices(conf):
    conf.config(policy='fifo', group='local_policy')

    with pytest.raises(exceptions.InvalidParameter) as info:
        base.load_policy(CONF)

    assert info.value.kwargs['field'] == '[local_policy] policy'
    assert 'cmms, idle_tax, weighted' in str(info.value)


@pytest.mark.parametrize('line, option', [
    ('tau = 1.5', 'tau'),
    ('tau = -0.1', 'tau'),
    ('share_policy = fair', 'share_policy'),
    ('tau_mode = sometimes', 'tau_mode'),
    ('tau_decay = 0.5', 'tau_decay'),
    ('weights = gold:x,silver:2', 'weights'),
    ('weights = gold:-4', 'weights'),
    ('default_weight = 0', 'default_weight'),
    ('min_guest_mb = -1', 'min_guest_mb'),
    ('deadband_mb = -5', 'deadband_mb'),
    ('max_step_mb = 0', 'max_step_mb'),
    ('reclaim_chunk_mb = 0', 'reclaim_chunk_mb'),
    ('policy = fifo', 'policy'),
])
def test_invalid_values_fail_naming_the_option(tmp_path, line, option):
    exc = conf_files.refused(tmp_path, local_policy_conf, line,
                             base.load_policy)

    assert exc.kwargs['field'] == '[local_policy] %s' % option
    assert str(exc).startswith(
        "Invalid value for '[local_policy] %s'" % option)


def test_options_from_a_file_reach_the_policy(tmp_path):
    conf = conf_files.group_from_file(
        tmp_path, local_policy_conf,
        'policy = idle_tax\ntau_mode = static\ntau = 0.5\nmax_step_mb = 256')

    policy = base.load_policy(conf)

    assert isinstance(policy, idle_tax.IdleTaxPolicy)
    assert (policy.params.tau_mode, policy.params.tau,
            policy.params.max_step_mb) == ('static', 0.5, 256)
