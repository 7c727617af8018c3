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

"""Options of the [host_reclaim] group: host-side reclaim of cold guest
pages (ALGORITHMS.md §7)."""
from oslo_config import cfg

GROUP = cfg.OptGroup('host_reclaim', title='Host-side reclaim options')

opts = [
    cfg.StrOpt('controller', default='none',
               help='Host reclaim controller (memagg.host_reclaim entry '
                    'point): none (the balloon alone) or senpai (pages '
                    'cold guest memory out into the host\'s swap, held to '
                    'promotion_slo).'),
    cfg.StrOpt('mechanism', default='auto',
               help='How pages are reclaimed (memagg.reclaim entry point): '
                    'madvise (process_madvise MADV_PAGEOUT on the sampler\'s '
                    'cold ranges of QEMU\'s guest RAM), memcg (the VM\'s '
                    'cgroup v2 memory.reclaim) or auto (the first of these '
                    'the host offers).'),
    cfg.FloatOpt('cold_age_s', default=120.0,
                 help='A sampled page is cold once the sampler has seen it '
                      'idle for this long, window after window.'),
    cfg.FloatOpt('promotion_slo', default=0.2,
                 help='Most promotions (pages of the VM faulted back from '
                      'swap) per minute, in percent of its WSS max-average; '
                      'above it the controller backs off.'),
    cfg.FloatOpt('psi_some_max', default=5.0,
                 help='Host memory pressure (/proc/pressure/memory some '
                      'avg10, percent) above which the controller backs '
                      'off.'),
    cfg.IntOpt('grow_mb', default=32,
               help='How much the controller raises a VM\'s reclaim limit '
                    'a period while promotions and pressure stay low.'),
    cfg.FloatOpt('backoff', default=0.5,
                 help='Factor (between 0 and 1) the reclaim limit is '
                      'multiplied by when promotions or pressure are too '
                      'high.'),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
