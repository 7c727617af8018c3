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

"""Nova's checks of memagg's flavor extra specs (entry point
``nova.api.extra_spec_validators``): from compute API microversion 2.86,
``openstack flavor set --property memagg:...`` with a value memagg cannot
use is refused with a 400 naming the spec, rather than being logged and
ignored later on the compute node or in the scheduler filter."""
import dataclasses

from nova.api.validation.extra_specs import base
from nova import exception

# A positive decimal number (not 0, 0.0, ...) or a QoS class name
# ([local_policy] weights on the compute nodes, e.g. gold).
_WEIGHT = (r'(?=[0-9.]*[1-9])[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?'
           r'|[A-Za-z][A-Za-z0-9_-]*')


@dataclasses.dataclass
class _Validator(base.ExtraSpecValidator):
    """Nova's validator, whose refusal names the extra spec and says what
    it takes (Nova's own message shows the value and a pattern only)."""

    takes: str = ''

    def validate(self, name, value):
        try:
            super().validate(name, value)
        except exception.ValidationError:
            raise exception.ValidationError(
                f"Validation failed; {name} = '{value}' is {self.takes}."
            ) from None


EXTRA_SPEC_VALIDATORS = [
    _Validator(
        name='memagg:weight',
        description=(
            'The QoS weight of the flavor\'s VMs: a positive number, or the '
            'name of a class in the compute nodes\' [local_policy] weights '
            '(e.g. gold). Their share of their host\'s memory under the '
            'weighted local policy, and of its remote memory on donors '
            '(the tier policy), grows with it.'),
        value={'type': str, 'pattern': _WEIGHT},
        takes='neither a positive number (e.g. 2.5) nor a QoS class name '
              '(e.g. gold)',
    ),
    _Validator(
        name='memagg:expected_wss_mb',
        description=(
            'The working set, MiB, a VM of the flavor is expected to use: '
            'what memagg\'s scheduler filter checks a host has free.'),
        value={'type': int, 'min': 1},
        takes='not a whole number of MiB, 1 or more',
    ),
    _Validator(
        name='memagg:host_reclaim',
        description=(
            'Whether memagg-compute may move the cold memory of the '
            'flavor\'s VMs to host swap (false: never).'),
        value={'type': bool},
        takes='not true or false',
    ),
]


def register():
    """memagg's validators, as Nova loads them."""
    return EXTRA_SPEC_VALIDATORS
