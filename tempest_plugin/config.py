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

"""The tempest.conf options of memagg's tests."""
from oslo_config import cfg

service_available_group = cfg.OptGroup(
    name='service_available', title='Available OpenStack services')

ServiceAvailableGroup = [
    cfg.BoolOpt('memagg', default=True,
                help='Whether memagg (memory aggregation) is deployed; its '
                     'tests are skipped when it is not.'),
]

memagg_group = cfg.OptGroup(name='memagg',
                            title='Memory aggregation service options')

MemaggGroup = [
    cfg.StrOpt('catalog_type', default='memory-aggregation',
               help='Service type of memagg-api in the service catalog.'),
    cfg.StrOpt('endpoint_type', default='publicURL',
               choices=['public', 'admin', 'internal', 'publicURL',
                        'adminURL', 'internalURL'],
               help='Endpoint type of memagg-api to use.'),
    cfg.StrOpt('region', default='',
               help='Region of memagg-api; empty means [identity] region.'),
    cfg.StrOpt('min_microversion', default=None,
               help='Lowest API microversion the tests may use (e.g. 1.0).'),
    cfg.StrOpt('max_microversion', default='latest',
               help='Highest API microversion the tests may use.'),
    cfg.IntOpt('build_timeout', default=120, min=1,
               help='Seconds to wait for memagg-scheduler to plan an audit '
                    '(pending to recommended or failed).'),
    cfg.FloatOpt('build_interval', default=1.0, min=0.1,
                 help='Seconds between two reads of an audit while '
                      'waiting for it.'),
]
