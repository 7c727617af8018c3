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

"""Options of the [placement] group: memagg-scheduler's Placement job.

When enabled, memagg-scheduler sets the MEMORY_MB ``allocation_ratio`` of
each compute node's resource provider from its VMs' measured working sets
(memagg.scheduler.placement). The credentials and the HTTP session are
keystoneauth1's own options, as in [nova]; the account needs the admin
role (Placement's default policy for writing inventories).
"""
from oslo_config import cfg

from memagg.conf import keystoneauth

GROUP = cfg.OptGroup('placement', title='Placement inventory options',
                     help='memagg-scheduler keeps each compute node\'s '
                          'MEMORY_MB allocation_ratio in Placement in line '
                          'with what its VMs really use. Off by default; '
                          'nova.conf\'s [DEFAULT] ram_allocation_ratio must '
                          'then be left unset (initial_ram_allocation_ratio '
                          'is the starting value), or nova-compute writes '
                          'its own ratio back on every update.')

#: Seconds a request may take (the session's timeout default).
TIMEOUT = 30

opts = [
    cfg.BoolOpt('enabled', default=False,
                help='Set the MEMORY_MB allocation_ratio of every compute '
                     'node that memagg-compute reports from its VMs\' '
                     'working sets, every interval seconds.'),
    cfg.IntOpt('interval', default=300, min=10,
               help='Seconds between two runs of the job.'),
    cfg.FloatOpt('margin', default=0.1, min=0.0, max=0.9,
                 help='Share of a host\'s usable memory kept free: the '
                      'ratio is (1 - margin) x booked / working set of its '
                      'VMs.'),
    cfg.FloatOpt('min_allocation_ratio', default=1.0, min=0.01,
                 help='Lowest allocation_ratio written (still raised to '
                      'what the host\'s current allocations need).'),
    cfg.FloatOpt('max_allocation_ratio', default=4.0, min=0.01,
                 help='Highest allocation_ratio written; at least '
                      'min_allocation_ratio.'),
    cfg.FloatOpt('step', default=0.05, min=0.0,
                 help='Smallest change of a host\'s allocation_ratio worth '
                      'a write to Placement; smaller changes are left '
                      'alone so that the ratio does not follow every '
                      'sample.'),
    cfg.StrOpt('region_name',
               help='Region of the Placement endpoint in the Keystone '
                    'catalog; unset takes the catalog\'s only or first '
                    'region.'),
    cfg.StrOpt('interface', default='internal',
               choices=['public', 'internal', 'admin'],
               help='Which catalog endpoint of Placement to call.'),
    cfg.URIOpt('endpoint_override', schemes=['http', 'https'],
               help='Placement\'s URL (e.g. http://controller/placement), '
                    'used instead of the catalog\'s placement endpoint.'),
]


def register_opts(conf):
    keystoneauth.register_opts(conf, GROUP, opts, TIMEOUT)


def list_opts():
    return keystoneauth.list_opts(GROUP, opts, TIMEOUT)
