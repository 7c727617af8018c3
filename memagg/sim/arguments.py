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

"""memagg-sim's and memagg-sim sweep's command-line arguments: the parser
that reports a mistake in one line, the checked value types, and the
argument groups both commands share (input and synthetic trace, the
simulation's options, progress and quiet)."""
import argparse
import math

from memagg.common import cli
from memagg.sim import reservoir
from memagg.sim import synthetic

PROG = 'memagg-sim'
DEFAULT_SEEDS = (0, 1, 2)
DEFAULT_HOSTS_CPUS = 32.0
DEFAULT_HOST_MEMORY_MB = 131072.0


class Parser(argparse.ArgumentParser):
    """argparse that reports a mistake as one line on stderr."""

    def error(self, message):
        raise cli.UsageError(message)


def _checked(kind, test, what):
    def convert(text):
        try:
            value = kind(text)
        except ValueError:
            value = None
        if value is None or not test(value):
            raise argparse.ArgumentTypeError('must be %s, got %r'
                                             % (what, text))
        return value
    return convert


POSITIVE_INT = _checked(int, lambda v: v >= 1, 'an integer >= 1')
_INT = _checked(int, lambda v: True, 'an integer')
POSITIVE = _checked(float, lambda v: v > 0 and math.isfinite(v),
                    'a number > 0')
NON_NEGATIVE = _checked(float, lambda v: v >= 0 and math.isfinite(v),
                        'a number >= 0')
FRACTION = _checked(float, lambda v: 0 <= v <= 1, 'a number from 0 to 1')
_OPEN_FRACTION = _checked(float, lambda v: 0 < v <= 1,
                          'a number > 0 and <= 1')
_HOUR = _checked(float, lambda v: math.isfinite(v), 'a number (hours)')


def _seeds(text):
    """--seeds: distinct integers separated by commas."""
    seeds = [_INT(part) for part in text.split(',')]
    if len(set(seeds)) != len(seeds):
        raise argparse.ArgumentTypeError('must be distinct integers, got %r'
                                         % text)
    return seeds


#: Synthetic parameter -> (type, help); defaults come from synthetic.Params.
SYNTHETIC = (
    ('vms', POSITIVE_INT, 'VMs (default: %d per host).'
     % synthetic.Params.VMS_PER_HOST),
    ('days', POSITIVE, 'Length of the trace in days (default %(d)s).'),
    ('step', POSITIVE, 'Seconds between two samples (default %(d)s).'),
    ('used_ratio', _OPEN_FRACTION, 'Mean working set over booked memory '
     'across VMs (default %(d)s).'),
    ('used_spread', NON_NEGATIVE, 'Standard deviation of that ratio across '
     'VMs (default %(d)s; ratios are clipped to 0.05..1).'),
    ('cpu_mean', _OPEN_FRACTION, 'Mean CPU use as a share of the VM\'s '
     'vCPUs (default %(d)s).'),
    ('cpu_spread', NON_NEGATIVE, 'Standard deviation of that share across '
     'VMs (default %(d)s).'),
    ('diurnal_amplitude', FRACTION, 'Daily CPU swing: use is multiplied by '
     '1 + A cos(2 pi (hour - peak) / 24) (default %(d)s).'),
    ('diurnal_peak_hour', _HOUR, 'Hour of the day of the CPU peak (default '
     '%(d)s).'),
    ('diurnal_phase_spread_hours', NON_NEGATIVE, 'Standard deviation of '
     'each VM\'s peak hour around it (default %(d)s).'),
    ('mem_phase_hours', POSITIVE, 'Mean length of a memory phase in hours; '
     'the working set changes level at each phase (default %(d)s).'),
    ('mem_phase_change', FRACTION, 'A phase multiplies the working set by '
     'a factor drawn in 1 +- this (default %(d)s).'),
    ('mem_phase_sync', FRACTION, 'Share of VMs that follow cloud-wide '
     'memory phases (same switch times and factors), so that working sets '
     'rise together (default %(d)s).'),
    ('noise', NON_NEGATIVE, 'Relative noise on every CPU and working-set '
     'sample (default %(d)s).'),
    ('seed', _INT, 'Random seed; the same seed and parameters give the '
     'same trace (default %(d)s).'),
)


def add_input_arguments(parser, seeds=False):
    """The "input" and "synthetic trace" argument groups; with ``seeds``,
    --seeds SEED[,SEED...] instead of --seed and --write-trace."""
    source = parser.add_argument_group('input')
    if seeds:
        source.add_argument(
            '--trace', metavar='FILE', action='append',
            help='Trace CSV to replay (format below); repeat it for '
                 'several traces, each on the hosts given below. Without '
                 'it the synthetic generator makes one per seed (options '
                 'under "synthetic trace"); with it and --seeds, the '
                 'settings run over the traces and those synthetic ones '
                 '(of the generator\'s hosts) together.')
    else:
        source.add_argument(
            '--trace', metavar='FILE',
            help='Trace CSV to replay (format below). Without it the '
                 'synthetic generator makes one (options under "synthetic '
                 'trace").')
    hosts = source.add_mutually_exclusive_group()
    hosts.add_argument(
        '--hosts-file', metavar='FILE',
        help='Hosts CSV: host,cpus,memory_mb (only with --trace). Without '
             'it: --hosts identical hosts, those the trace names first.')
    hosts.add_argument(
        '--hosts', type=POSITIVE_INT, metavar='N',
        help='Number of hosts (default: %d for the synthetic trace, the '
             'hosts the trace names otherwise).'
             % synthetic.Params.hosts)
    source.add_argument(
        '--host-cpus', type=POSITIVE, metavar='CORES',
        help='Cores of each host (default %g; not with --hosts-file).'
             % DEFAULT_HOSTS_CPUS)
    source.add_argument(
        '--host-memory-mb', type=POSITIVE, metavar='MIB',
        help='Memory VMs may use on each host, MiB: RAM less what the host '
             'reserves (default %g; not with --hosts-file).'
             % DEFAULT_HOST_MEMORY_MB)

    gen = parser.add_argument_group(
        'synthetic trace (without --trace; see memagg.sim.synthetic)')
    defaults = synthetic.Params()
    for name, kind, text in SYNTHETIC:
        if seeds and name == 'seed':
            continue
        gen.add_argument('--' + name.replace('_', '-'), type=kind,
                         metavar='N' if kind in (POSITIVE_INT, _INT)
                         else 'X',
                         help=text % {'d': getattr(defaults, name)})
    if seeds:
        gen.add_argument(
            '--seeds', type=_seeds, metavar='SEED[,SEED...]',
            help='Random seeds, one trace each (default %s).'
                 % ','.join(map(str, DEFAULT_SEEDS)))
    else:
        gen.add_argument(
            '--write-trace', metavar='FILE',
            help='Also write the generated trace as a trace CSV, e.g. to '
                 'edit and replay it with --trace.')


def add_simulation_arguments(group):
    """--config-file and the [wss] and loop options every simulation
    takes, in argument group ``group``."""
    group.add_argument(
        '--config-file', metavar='FILE',
        help='memagg configuration file whose [consolidation] and [wss] '
             'options the simulation uses (default: none, the options\' '
             'defaults).')
    group.add_argument(
        '--maxavg-samples', type=POSITIVE_INT, metavar='N',
        help='Working-set estimates averaged by the WSS max-average '
             '(default: [wss] maxavg_samples, 5).')
    group.add_argument(
        '--maxavg-slice-s', type=POSITIVE, metavar='SECONDS',
        help='Slice over which the WSS max-average keeps the largest '
             'average (default: [wss] maxavg_slice_s, 3600).')
    group.add_argument(
        '--round-interval', type=POSITIVE, metavar='SECONDS',
        help='Virtual seconds between two consolidation rounds, rounded up '
             'to whole steps (default: every step, as Neat ran a round at '
             'each collection).')
    group.add_argument(
        '--migration-time', type=NON_NEGATIVE, metavar='SECONDS',
        help='Virtual seconds a live migration takes before the VM runs on '
             'its destination, rounded up to whole steps, at least one '
             '(default: one step). Its hosts sit out rounds meanwhile, and '
             'the destination lends none of the memory the VM will use.')
    group.add_argument(
        '--max-remote-ratio', type=FRACTION, metavar='X',
        help='Largest share of a VM\'s booked memory it may borrow from '
             'other hosts\' idle memory when its host runs short (default: '
             '[reservoir] max_remote_ratio, 0.5; 0: no remote memory, as '
             'also with [swapd] enabled or auto_grant false).')
    group.add_argument(
        '--remote-budget', metavar='NAME',
        help='Per-VM remote limits, the plug-in memagg-compute runs: fixed '
             'or tlp (default: [reservoir] remote_budget, fixed). The other '
             '[reservoir] options (tlp_*, donor_reserve_mb, slab_size_mb, '
             'donor_selection) come from --config-file.')
    group.add_argument(
        '--remote-penalty', type=NON_NEGATIVE, metavar='X',
        help='Extra cores a VM uses, as a share of the cores it uses, per '
             'share of its working set that is remote: page faults served '
             'over the network cost CPU time (default %g: half its working '
             'set remote, %g %%%% more cores). A model parameter, not a '
             'memagg option.'
             % (reservoir.Settings.penalty,
                50 * reservoir.Settings.penalty))
    group.add_argument(
        '--l2-penalty', type=NON_NEGATIVE, metavar='X',
        help='Model two tiers of remote memory (donors\' DRAM, and the '
             'local copy on the VM\'s own host: reclaimed slabs stay the '
             'VM\'s there, what donors cannot lend is granted there, and '
             'comes back to donors with room), X being the local tier\'s '
             '--remote-penalty (flash is slower than a donor\'s DRAM: '
             'e.g. 4 times it). Default: one tier, donors only.')
    group.add_argument(
        '--host-reclaim', metavar='NAME',
        help='Host reclaim controller, the plug-in memagg-compute runs: '
             'none or senpai (default: [host_reclaim] controller, none). '
             'Its other [host_reclaim] options (promotion_slo, grow_mb, '
             'backoff) come from --config-file; no host memory pressure is '
             'modelled.')
    group.add_argument(
        '--no-balloon', type=FRACTION, metavar='X',
        help='Share of the VMs without a balloon, spread evenly over the '
             'trace\'s VMs: they count their booked memory, less what host '
             'reclaim holds paged out (default 0: every VM counts its WSS '
             'max-average, as its balloon brings it there).')


def add_noise_arguments(group):
    """--progress and --quiet, in argument group ``group``."""
    noise = group.add_mutually_exclusive_group()
    noise.add_argument(
        '--progress', action='store_true',
        help='Show the progress bar on stderr even when it is not a '
             'terminal (it is shown on a terminal anyway).')
    noise.add_argument(
        '--quiet', action='store_true',
        help='No progress bar and no summary on stdout (files are still '
             'written).')


def show_progress(args, stderr):
    """Whether to draw the progress bar: on a terminal or with --progress,
    never with --quiet."""
    return not args.quiet and (args.progress or stderr.isatty())
