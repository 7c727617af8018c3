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

import pytest

from memagg.api import microversion


@pytest.mark.parametrize('value, expected', [
    (None, (1, 0)),
    ('', (1, 0)),
    ('memory-aggregation 1.0', (1, 0)),
    ('memory-aggregation 1.1', (1, 1)),
    ('Memory-Aggregation latest', microversion.MAX_VERSION),
    ('compute 2.90, memory-aggregation 1.1', (1, 1)),
    ('compute 2.90', (1, 0)),
])
def test_parse_header(value, expected):
    assert microversion.parse_header(value) == expected


@pytest.mark.parametrize('value', [
    'memory-aggregation 1', 'memory-aggregation 1.x',
    'memory-aggregation 01.1', 'memory-aggregation', 'memory-aggregation 1 1',
])
def test_malformed(value):
    with pytest.raises(microversion.MalformedVersion, match='OpenStack-API'):
        microversion.parse_header(value)


@pytest.mark.parametrize('value', ['memory-aggregation 1.99',
                                   'memory-aggregation 2.0',
                                   'memory-aggregation 0.9'])
def test_unsupported(value):
    with pytest.raises(microversion.UnsupportedVersion, match='1.0 to %s' % (
            microversion.to_string(microversion.MAX_VERSION))):
        microversion.parse_header(value)


def test_response_header():
    assert microversion.response_header((1, 1)) == 'memory-aggregation 1.1'
