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

"""Policies of /v1/host_usages."""
from memagg.api.policies import base

LIST = 'memagg:host_usage:list'

rules = [
    base.get_rule(
        LIST, base.ADMIN,
        'List every host\'s memory and what its instances use (Nova\'s '
        'scheduler filter and weigher read it).',
        '/v1/host_usages'),
]


def list_rules():
    return rules
