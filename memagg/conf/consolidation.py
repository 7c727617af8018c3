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

"""Options of the [consolidation] group: memagg-scheduler's rounds.

The algorithm families and their parameters are specified in
ALGORITHMS.md §3. Each family is a plug-in named here, with its parameters
as a JSON object, as in OpenStack Neat; the defaults are Neat's.
"""
from oslo_config import cfg

GROUP = cfg.OptGroup('consolidation', title='Consolidation options')

_PARAMS_HELP = (' Parameters of the plug-in, as a JSON object; keys the '
                'plug-in does not take are an error.')


def _family(name, default, family, what):
    return [
        cfg.StrOpt(name, default=default,
                   help='%s plug-in (memagg.consolidation.%s entry point).'
                        % (what, family)),
        cfg.StrOpt(name + '_params', default='{}',
                   help='%s.%s' % (what, _PARAMS_HELP)),
    ]


opts = (
    _family('underload_cpu', 'last_n_average', 'underload',
            'CPU underload detection: threshold, last_n_average or never')
    + _family('underload_mem', 'last_n_average', 'underload',
              'Memory underload detection: threshold, last_n_average or '
              'never')
    + [cfg.StrOpt('underload_require', default='both',
                  choices=['both', 'either'],
                  help='A host is underloaded (and emptied) when both its '
                       'cpu and its memory are, or when either is.')]
    + _family('overload_cpu', 'threshold', 'overload',
              'CPU overload detection: threshold, last_n_average, mad, iqr, '
              'lr, lrr, otf or mhod. threshold (0.9) is the default: on the '
              'public Bitbrains traces MHOD (otf 0.1) lets hosts run past '
              'their cores for 0.6-0.9 %% of the time, as its time budget '
              'allows (see the consolidation admin guide)')
    + _family('overload_mem', 'threshold', 'overload',
              'Memory overload detection (same plug-ins as overload_cpu; '
              'threshold defaults to 0.95 for memory)')
    + _family('vm_selection', 'minimum_migration_time_max_cpu',
              'vm_selection',
              'VM selection on an overloaded host: random, '
              'minimum_utilization, minimum_migration_time, '
              'minimum_migration_time_max_cpu or maximum_remote')
    + _family('placement', 'best_fit_decreasing', 'placement',
              'VM placement: best_fit_decreasing')
    + [
        cfg.StrOpt('memory_basis', default='wss', choices=['wss', 'booked'],
                   help='What a VM\'s memory counts as when packing: its '
                        'working set max-average (wss) or its flavor RAM '
                        '(booked, as Neat did, for comparison). An audit '
                        'may choose its own.'),
        cfg.FloatOpt('remote_weight', default=0.0, min=0.0, max=1.0,
                     help='Share of the remote memory granted to a host\'s '
                          'VMs that counts as usable host memory.'),
        cfg.IntOpt('history_length', default=576, min=1,
                   help='Utilisation samples per host and VM the detectors '
                        'and placement see (newest last). The default is '
                        'two days of 5-minute samples, what fill_window '
                        'looks back over.'),
        cfg.FloatOpt('fill_headroom_cpu', default=0.02, min=0.0, max=1.0,
                     help='Hysteresis: placement fills a host\'s cpu only '
                          'to the utilisation its overload_cpu detector '
                          'accepts (its threshold, MHOD\'s state '
                          'threshold...) less this share of the host, and '
                          'VMs leave an overloaded host until it is back '
                          'under that level, so that a host just filled or '
                          'relieved is not overloaded again as its load '
                          'moves.'),
        cfg.FloatOpt('fill_headroom_mem', default=0.15, min=0.0, max=1.0,
                     help='The same for memory and overload_mem, with '
                          'memory_basis wss: the room left for working '
                          'sets to grow (booked memory does not grow: no '
                          'headroom is kept for it).'),
        cfg.IntOpt('fill_window', default=576, min=1, max=1000000,
                   help='Placement counts each VM\'s cpu as its peak over '
                        'this many latest samples (at most history_length) '
                        'and a host\'s as the sum of its VMs\' peaks, '
                        'rather than their latest: a host filled at night '
                        'keeps room for its VMs\' busy hours. The default, '
                        'two days of 5-minute samples, keeps yesterday\'s '
                        'peak in view when a host is filled tonight (with '
                        'one day, hosts were emptied as a day-old peak left '
                        'the window and filled again at the next one). 1 '
                        'places by the latest samples, as Neat did.'),
        cfg.IntOpt('migration_cooldown', default=3600, min=0,
                   max=31536000,
                   help='Seconds after a VM migrated during which rounds '
                        'neither move it off an overloaded host nor move '
                        'it to empty an underloaded one (0: no '
                        'cool-down). An operator\'s own migration '
                        '(POST /v1/migrations) is not held back.'),
        cfg.IntOpt('max_migrations_per_round', default=100, min=0,
                   max=100000,
                   help='Migrations a round may plan (0: no cap); '
                        'overloaded hosts are relieved first, the most '
                        'loaded first.'),
        cfg.IntOpt('max_migrations_per_host_hour', default=40, min=0,
                   max=100000,
                   help='Migrations a host may take part in, as source or '
                        'destination, within an hour, those of the last '
                        'hour and those the round plans (0: no cap). A '
                        'host being emptied is not held back by its own '
                        'cap: it is about to power off.'),
        cfg.IntOpt('interval', default=600, min=0,
                   help='Seconds between two periodic consolidation '
                        'rounds; 0 runs rounds only on demand '
                        '(POST /v1/audits).'),
        cfg.BoolOpt('auto_execute', default=False,
                    help='Execute the plans of periodic rounds through Nova '
                         'as soon as they are made, instead of leaving them '
                         'recommended.'),
        cfg.IntOpt('max_migrations_per_host', default=1, min=1,
                   help='Live migrations a host takes part in at once, as '
                        'source or destination.'),
        cfg.IntOpt('max_retries', default=2, min=0,
                   help='Times a failed live migration is tried again '
                        'before its action fails.'),
        cfg.IntOpt('migration_timeout', default=900, min=1,
                   help='Seconds a live migration may take before it is '
                        'aborted through Nova and its action fails.'),
        cfg.FloatOpt('poll_interval', default=5.0, min=0.1,
                     help='Seconds between two looks at a migrating '
                          'server in Nova.'),
        cfg.IntOpt('audit_retention_hours', default=720, min=0,
                   help='Hours an audit that has ended (in any state but '
                        'pending, planning and executing) is kept after '
                        'its last change, with its actions and their '
                        'migrations; "memagg-manage db purge" deletes the '
                        'older ones.'),
    ]
)


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
