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

"""memagg's flavor extra specs as Nova's own validation checks them
(nova.api.validation.extra_specs.validators, which loads the
nova.api.extra_spec_validators entry points: memagg's included): a value
memagg cannot use is refused naming the spec and what it takes."""
from nova.api.validation.extra_specs import validators
from nova import exception
import pytest

from memagg.nova import extra_specs


def test_nova_loads_memagg_s_validators():
    for validator in extra_specs.register():
        assert validators.VALIDATORS[validator.name] is validator
    assert 'memagg' in validators.NAMESPACES


@pytest.mark.parametrize('name, value', [
    ('memagg:weight', '2.5'), ('memagg:weight', '4'),
    ('memagg:weight', '.5'), ('memagg:weight', '1e-3'),
    ('memagg:weight', 'gold'), ('memagg:expected_wss_mb', '2048'),
    ('memagg:host_reclaim', 'false'), ('memagg:host_reclaim', 'True'),
])
def test_usable_values_pass(name, value):
    validators.validate(name, value)


@pytest.mark.parametrize('name, value, says', [
    ('memagg:weight', '0', 'neither a positive number (e.g. 2.5) nor a '
                           'QoS class name (e.g. gold)'),
    ('memagg:weight', '0.0', 'neither a positive number'),
    ('memagg:weight', '-1', 'neither a positive number'),
    ('memagg:weight', '0e5', 'neither a positive number'),
    ('memagg:weight', 'gold!', 'neither a positive number'),
    ('memagg:expected_wss_mb', '0', 'not a whole number of MiB, 1 or more'),
    ('memagg:expected_wss_mb', 'lots', 'not a whole number of MiB'),
    ('memagg:host_reclaim', 'maybe', 'not true or false'),
])
def test_unusable_values_are_refused_naming_the_spec(name, value, says):
    with pytest.raises(exception.ValidationError) as refused:
        validators.validate(name, value)
    assert str(refused.value).startswith(
        "Validation failed; %s = '%s' is %s" % (name, value, says))


def test_an_unknown_memagg_spec_is_refused():
    with pytest.raises(exception.ValidationError, match='memagg:colour'):
        validators.validate('memagg:colour', 'red')
