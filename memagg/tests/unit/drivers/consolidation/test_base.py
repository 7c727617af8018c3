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

"""Parameter checking shared by every consolidation plug-in."""
import pytest

from memagg.common import exceptions
from memagg.drivers.consolidation import base


class Demo(base.OverloadDetector):
    name = 'demo'
    PARAMS = {'threshold': (0.8, base.fraction),
              'n': (base.REQUIRED, base.positive_int)}
    MEM_DEFAULTS = {'threshold': 0.95}

    def is_overloaded(self, utilization):
        return utilization[-1] > self.params['threshold']


def test_defaults_fill_missing_optional_keys():
    assert Demo({'n': 2}).params == {'threshold': 0.8, 'n': 2}


def test_memory_dimension_has_its_own_defaults():
    assert Demo({'n': 2}, dimension='mem').params['threshold'] == 0.95
    # An explicit value wins over the memory default.
    assert Demo({'n': 2, 'threshold': 0.5},
                dimension='mem').params['threshold'] == 0.5


def test_unknown_key_is_named_with_the_accepted_ones():
    with pytest.raises(exceptions.InvalidParameter) as err:
        Demo({'n': 2, 'treshold': 0.7})
    assert err.value.kwargs['field'] == 'overload.demo.treshold'
    assert 'n, threshold' in str(err.value)


def test_missing_required_key_is_named():
    with pytest.raises(exceptions.InvalidParameter) as err:
        Demo({})
    assert err.value.kwargs['field'] == 'overload.demo.n'
    assert 'required' in str(err.value)


@pytest.mark.parametrize('params,field', [
    ({'n': 0}, 'overload.demo.n'),
    ({'n': 2.5}, 'overload.demo.n'),
    ({'n': True}, 'overload.demo.n'),
    ({'n': 2, 'threshold': 1.5}, 'overload.demo.threshold'),
    ({'n': 2, 'threshold': 'high'}, 'overload.demo.threshold'),
])
def test_bad_value_is_named(params, field):
    with pytest.raises(exceptions.InvalidParameter) as err:
        Demo(params)
    assert err.value.kwargs['field'] == field


def test_parameters_must_be_an_object():
    with pytest.raises(exceptions.InvalidParameter) as err:
        Demo([0.8])
    assert err.value.kwargs['field'] == 'overload.demo'


def test_unknown_dimension_is_rejected():
    with pytest.raises(exceptions.InvalidParameter) as err:
        Demo({'n': 2}, dimension='disk')
    assert err.value.kwargs['field'] == 'overload.demo.dimension'


def test_load_unknown_plugin_lists_installed_ones():
    with pytest.raises(exceptions.InvalidParameter) as err:
        base.load('underload', 'no-such-plugin', option='[consolidation] x')
    assert err.value.kwargs['field'] == '[consolidation] x'
    assert 'no-such-plugin' in str(err.value)
