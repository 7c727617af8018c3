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

"""QoS weights of the weighted policy: a VM's memagg:weight (a number or a
class name such as gold) turned into a positive number."""
import math

from oslo_log import log as logging

LOG = logging.getLogger(__name__)

_FIX = 'use name:number pairs with positive numbers, e.g. ' \
       'gold:4,silver:2,bronze:1'


def parse_weights(mapping):
    """{class name: weight} from option values (strings or numbers),
    names lower-cased. Raises ValueError saying what is wrong."""
    if not isinstance(mapping, dict):
        raise ValueError('not a mapping; %s' % _FIX)
    weights = {}
    for name, value in mapping.items():
        key = str(name).strip().lower()
        if not key:
            raise ValueError('empty class name; %s' % _FIX)
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ValueError('weight of %r is %r, not a number; %s'
                             % (name, value, _FIX))
        if not (number > 0 and math.isfinite(number)):
            raise ValueError('weight of %r is %s, not positive; %s'
                             % (name, value, _FIX))
        weights[key] = number
    return weights


def resolve_weight(value, weights, default):
    """The number for a VM's weight ``value`` (number, numeric string or
    class name; None gives ``default``). An unknown or non-positive value
    also gives ``default``, with a warning: one VM's bad property must not
    stop the node's policy."""
    if value is None or value == '':
        return default
    if isinstance(value, str):
        key = value.strip().lower()
        if key in weights:
            return weights[key]
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = 0.0
    if number > 0 and math.isfinite(number):
        return number
    LOG.warning('memagg:weight %r is neither a positive number nor one of '
                '%s; using the default weight %s',
                value, ', '.join(sorted(weights)), default)
    return default
