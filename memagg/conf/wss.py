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

"""Options of the [wss] group: working-set estimation and its samples.

The estimators and their parameters are specified in ALGORITHMS.md §1.
"""
from oslo_config import cfg

GROUP = cfg.OptGroup('wss', title='Working-set estimation options')

opts = [
    cfg.IntOpt('sample_retention_hours', default=168, min=1,
               help='WSS and host samples older than this are purged by '
                    'memagg-scheduler and by "memagg-manage db purge".'),
    cfg.StrOpt('estimator', default='badis',
               help='WSS estimator plug-in (memagg.wss entry point): '
                    'stats (balloon statistics), sampler (sampled '
                    'accessed bits), swap_ghost (distances of swap-ins '
                    'in the eviction queue) or badis (sampler and '
                    'swap-ghost combined by a state machine).'),
    cfg.IntOpt('sampler_pages', default=1000, min=1, max=1000000,
               help='Pages n sampled per VM by the native sampler in its '
                    'first window, before any estimate; afterwards n '
                    'follows sampler_error (or stays at this value when '
                    'sampler_error is 0). WSS = (f / n) * m_cur.'),
    cfg.FloatOpt('sampler_error', default=0.05, min=0.0, max=1.0,
                 help='Wanted half-width of the confidence interval of the '
                      'sampled hot fraction p, relative to p (0.05: '
                      '+-5 %). Each window samples n = z^2 (1 - p) / '
                      '(sampler_error^2 p) pages, p from the last '
                      'estimate, fewer in a small VM (finite population '
                      'correction: n / (1 + (n - 1) / N) of its N pages), '
                      'within sampler_min_pages and '
                      'sampler_max_pages. 0 samples sampler_pages every '
                      'window.'),
    cfg.FloatOpt('sampler_confidence', default=0.95, min=0.5, max=0.9999,
                 help='Confidence level of the sampler\'s interval: the '
                      'one sampler_error aims at and the one reported with '
                      'each estimate (its half-width, in MiB).'),
    cfg.IntOpt('sampler_min_pages', default=1000, min=1, max=1000000,
               help='Fewest pages the sampler draws per VM and window, '
                    'whatever sampler_error asks.'),
    cfg.IntOpt('sampler_max_pages', default=20000, min=1, max=1000000,
               help='Most pages the sampler draws per VM and window '
                    '(a sampled page costs about 2 us of host CPU per '
                    'window), whatever sampler_error asks.'),
    cfg.FloatOpt('sampler_warming_change', default=0.05, min=0.0,
                 help='A VM whose current allocation (balloon "actual") '
                      'moved by more than this fraction during a window, '
                      'like a VM whose sampler was just opened, gives a '
                      'warming estimate: reported, but not fed to the '
                      'WSS max-average.'),
    cfg.StrOpt('sampler_backend', default='auto',
               choices=['auto', 'page_idle', 'damon_paddr', 'damon_memcg',
                        'damon_vaddr', 'clear_refs'],
               help='Kernel interface of the native sampler. auto picks '
                    'the best one the kernel supports, in the order '
                    'listed. damon_memcg (one kept-running kdamond, a '
                    'count per VM memory cgroup) needs the VM in a memory '
                    'cgroup of its own, else it is damon_paddr, as for a '
                    'VM whose idle pages host reclaim needs; it is not '
                    'auto\'s choice yet, since a draw costs its VM a '
                    'window and the kdamond a commit (see the WSS sampler '
                    'admin guide).'),
    cfg.BoolOpt('sampler_split_huge_pages', default=True,
                help='Split the transparent huge pages (QEMU\'s default '
                     'for guest RAM) that hold the pages the sampler draws, '
                     'so that each sampled 4 KiB page has its own accessed '
                     'bit: a huge page has one for its 2 MiB, and a hot set '
                     'then reads as rounded up to whole huge pages. At '
                     'most one huge page per sampled page (sampler_max_'
                     'pages) is split per draw, 0.2-0.8 ms each; the '
                     'guest runs on 4 KiB host pages there until '
                     'khugepaged collapses them back. Not for clear_refs. '
                     'Needs /proc/kpageflags and CAP_SYS_NICE.'),
    cfg.FloatOpt('shortage_swap_in_kb_s', default=0.0, min=0.0,
                 help='A guest swapping in faster than this (KiB/s, from '
                      'its balloon statistics) is short of memory.'),
    cfg.FloatOpt('shortage_major_fault_rate', default=50.0, min=0.0,
                 help='A guest taking more major page faults per second '
                      'than this is short of memory.'),
    cfg.IntOpt('ghost_bucket_mb', default=4, min=1,
               help='Width in MiB of a bucket of the swap-ghost distance '
                    'histogram.'),
    cfg.IntOpt('ghost_buckets', default=100, min=1,
               help='Buckets in the swap-ghost distance histogram; longer '
                    'distances count in the last one.'),
    cfg.FloatOpt('ghost_percentile', default=95.0, min=0.0, max=100.0,
                 help='The swap-ghost estimate is the smallest distance '
                      'covering this percentage of the period\'s '
                      'swap-ins.'),
    cfg.FloatOpt('badis_close_ratio', default=0.9, min=0.0, max=1.0,
                 help='Badis moves from V (sampler only) to VG (sampler and '
                      'ghost) when the sampler\'s estimate reaches this '
                      'fraction of the current allocation.'),
    cfg.IntOpt('badis_switch_periods', default=2, min=1,
               help='Consecutive periods with swap-ins that move Badis from '
                    'VG to G, and without swap-ins from G back to V.'),
    cfg.IntOpt('min_margin_mb', default=64, min=0,
               help='Floor of the Badis pinned-page correction added to '
                    'the sampler\'s estimate, so a VM is never shrunk to '
                    'the raw sampler value.'),
    cfg.IntOpt('grow_step_mb', default=128, min=1,
               help='With no remote-swap disk, Badis grows a VM whose '
                    'balloon statistics show a shortage by this much per '
                    'period.'),
    cfg.IntOpt('maxavg_samples', default=5, min=1,
               help='Estimates n averaged by the WSS max-average.'),
    cfg.IntOpt('maxavg_slice_s', default=3600, min=1,
               help='Sliding time slice (seconds) over which the WSS '
                    'max-average keeps the largest average: an increase '
                    'applies at once, a decrease after the slice.'),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
