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

"""Options of the [local_policy] group: a node's balloon targets.

The policies and their parameters are specified in ALGORITHMS.md §2.
"""
from oslo_config import cfg

GROUP = cfg.OptGroup('local_policy', title='Local memory policy options')

opts = [
    cfg.StrOpt('policy', default='cmms',
               help='Local policy plug-in (memagg.local_policy entry '
                    'point): cmms (guaranteed share up to the booked size, '
                    'extra shared), idle_tax (idle-memory tax) or weighted '
                    '(QoS weights).'),
    cfg.StrOpt('share_policy', default='equal',
               choices=['equal', 'proportional'],
               help='cmms: how memory left after the guarantees is shared '
                    'among VMs that need more: the same amount each, or in '
                    'proportion to each VM\'s unmet demand.'),
    cfg.StrOpt('tau_mode', default='dynamic', choices=['dynamic', 'static'],
               help='idle_tax: dynamic computes the tax rate tau every '
                    'period (rising at once, decaying slowly); static uses '
                    '[local_policy] tau.'),
    cfg.FloatOpt('tau', default=0.75, min=0.0, max=1.0,
                 help='idle_tax: the static tax rate tau; 0 is an equal '
                      'split, 1 gives every VM the same free memory.'),
    cfg.IntOpt('tau_free_mb', default=128, min=0,
               help='idle_tax, dynamic: free memory f the busiest VM keeps.'),
    cfg.FloatOpt('tau_decay', default=10.0, min=1.0,
                 help='idle_tax, dynamic: gamma; a lower tau is approached '
                      'by 1/gamma of the gap per period.'),
    cfg.DictOpt('weights', default={'gold': '4', 'silver': '2',
                                    'bronze': '1'},
                help='weighted: QoS class names and their weights, as '
                     'name:number pairs. A VM\'s class or number comes from '
                     'its flavor extra spec or image property '
                     'memagg:weight.'),
    cfg.FloatOpt('default_weight', default=1.0, min=0.0,
                 help='weighted: weight of a VM that names none (must be '
                      'positive).'),
    cfg.IntOpt('reclaim_chunk_mb', default=50, min=1,
               help='weighted: most memory one reclaim step takes from the '
                    'VM with the largest excess.'),
    cfg.IntOpt('min_guest_mb', default=256, min=0,
               help='A guest is never ballooned below this.'),
    cfg.IntOpt('deadband_mb', default=10, min=0,
               help='Target changes smaller than this are not applied, '
                    'but for a growth to the VM\'s booked size or maximum '
                    '(a VM can always get its booked size back).'),
    cfg.IntOpt('max_step_mb', default=512, min=1,
               help='Largest balloon move per VM and period, so a guest is '
                    'never shrunk faster than it can reclaim.'),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
