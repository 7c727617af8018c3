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

"""Options of the [reservoir] group: the global memory reservoir that
memagg-scheduler runs (ALGORITHMS.md §4), and the donor reserve and per-VM
remote limits every compute node keeps.

Remote memory is granted in fixed slabs held in donor hosts' RAM; the
donors of a grant are picked by a plug-in (memagg.reservoir entry point),
the remote limit of each VM by another (memagg.remote_budget).
"""
from oslo_config import cfg

GROUP = cfg.OptGroup('reservoir', title='Global memory reservoir options')

opts = [
    cfg.StrOpt('donor_selection', default='power_of_two',
               help='Donor selection plug-in (memagg.reservoir entry '
                    'point): power_of_two (sample two donors at random, '
                    'take the one with more lendable memory), '
                    'largest_first (split the request over the donors '
                    'with the most lendable memory first) or best_fit '
                    '(the donor with the least lendable memory that holds '
                    'the whole request, else largest_first). The '
                    'consumer\'s own host is never a donor.'),
    cfg.StrOpt('donor_selection_params', default='{}',
               help='Parameters of the donor selection plug-in, as a JSON '
                    'object; keys the plug-in does not take are an error. '
                    'power_of_two takes chunk_slabs (slabs given per draw, '
                    'default 1).'),
    cfg.IntOpt('slab_size_mb', default=64, min=1,
               help='Size of one slab, MiB: remote memory is granted, '
                    'lent and reclaimed in whole slabs.'),
    cfg.IntOpt('donor_reserve_mb', default=1024, min=0,
               help='Memory, MiB, a compute node keeps out of what it '
                    'lends: its lendable memory is its free memory '
                    'reservoir minus this, and nothing while one of its '
                    'own VMs is short of memory.'),
    cfg.FloatOpt('max_remote_ratio', default=0.5, min=0.0, max=1.0,
                 help='Largest share of a VM\'s booked memory that may be '
                      'held remotely (the per-VM cap); 0 grants no remote '
                      'memory at all.'),
    cfg.BoolOpt('local_tier', default=True,
                help='When the donors have no room for all the slabs a '
                     'grant asks (within the VM\'s cap), give the rest in '
                     'the local tier (L2: served from the consumer\'s '
                     'local copy only, which every grant has, until its '
                     'tier policy promotes them to a donor with room) '
                     'instead of cutting the grant; false: the grant is '
                     'cut to what the donors hold (partial), and refused '
                     'when they hold nothing.'),
    cfg.StrOpt('remote_budget', default='fixed',
               help='How memagg-compute sets each VM\'s remote limit, the '
                    'remote memory it may hold (memagg.remote_budget entry '
                    'point): fixed (every VM its max_remote_ratio cap, '
                    'asked at once when it runs short) or tlp (AIMD over '
                    'the host\'s remote budget: a VM that saw swap-ins or '
                    'is short grows by tlp_step_percent of the budget, one '
                    'with slack shrinks by tlp_step_percent of its limit, '
                    'all within the cap and never below what the VM '
                    'holds; a VM asks for what its limit has beyond what '
                    'it holds, one more grant each time).'),
    cfg.FloatOpt('tlp_step_percent', default=2.0, min=0.0, max=100.0,
                 help='tlp: the step P, in percent: a VM that saw swap-ins '
                      'grows by P % of the host\'s remote budget, a VM with '
                      'slack shrinks by P % of its own limit, each period. '
                      'Must be above 0.'),
    cfg.FloatOpt('tlp_slack_threshold', default=0.25, min=0.0, max=1.0,
                 help='tlp: a VM without swap-ins shrinks its limit when '
                      'its slack (limit less the remote memory it holds) '
                      'is above this fraction of its limit. At 0.25 a VM '
                      'keeps a quarter of its limit unclaimed before it '
                      'gives any back.'),
    cfg.StrOpt('tier_policy', default='watermarks',
               help='How memagg-compute splits each VM\'s remote slabs '
                    'between donors\' DRAM (L1) and the local copy only '
                    '(L2) (memagg.tiers entry point): watermarks (each '
                    'VM\'s L1 allocation is its memagg:weight share of '
                    'what the host may hold on donors; above its high '
                    'watermark its coldest slabs are demoted, below its '
                    'low watermark its hottest L2 slabs promoted, from '
                    'and into the VMs furthest from their allocations '
                    'first; a hot L2 slab takes the place of a colder L1 '
                    'one).'),
    cfg.FloatOpt('tier_high_watermark', default=1.0, min=0.0, max=1.0,
                 help='Fraction of a VM\'s L1 allocation above which its '
                      'coldest L1 slabs are demoted to L2. Must be above '
                      '0.'),
    cfg.FloatOpt('tier_low_watermark', default=0.75, min=0.0, max=1.0,
                 help='Fraction of a VM\'s L1 allocation below which its '
                      'hottest L2 slabs are promoted to L1 (up to the high '
                      'watermark). At most tier_high_watermark.'),
    cfg.IntOpt('tier_batch_slabs', default=8, min=1,
               help='Most slabs a host moves between the tiers per '
                    'tier_interval (a promotion copies a slab over the '
                    'network; a demotion only frees a donor\'s).'),
    cfg.FloatOpt('tier_exchange_ratio', default=2.0, min=1.0,
                 help='How much hotter an L2 slab must be than a VM\'s '
                      'coldest L1 slab to take its place: at least this '
                      'many times the L1 slab\'s swap-ins plus one, over '
                      'the last tier_interval. Above 1, slabs of about '
                      'the same heat do not swap places back and forth '
                      'every interval.'),
    cfg.IntOpt('tier_l1_capacity_mb', default=0, min=0,
               help='Most memory, MiB, this host\'s VMs may hold on '
                    'donors (L1) in all, shared among them by '
                    'memagg:weight, none more than its remote limit; 0: '
                    'the sum of their remote limits (each VM then keeps '
                    'its own limit, and weights do not matter).'),
    cfg.IntOpt('tier_interval', default=30, min=1,
               help='Seconds between two plans of moves between the '
                    'tiers; a slab\'s heat is the swap-ins it served over '
                    'the last interval.'),
    cfg.IntOpt('prepare_timeout', default=30, min=1,
               help='Seconds memagg-scheduler waits for a compute host to '
                    'answer one call of a grant\'s set-up or tear-down '
                    '(prepare, attach, free, reclaim slabs) before it '
                    'counts that host as failed.'),
    cfg.IntOpt('operation_attempts', default=3, min=1,
               help='Times memagg-scheduler asks a compute host to take '
                    'part in the release of a grant or a reclaim (each '
                    'ask waits up to prepare_timeout) before the '
                    'operation ends without it, failed with the reason.'),
    cfg.FloatOpt('operation_retry_interval', default=2.0, min=0,
                 help='Seconds between the first two asks of '
                      'operation_attempts; each next wait is twice the '
                      'previous one.'),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
