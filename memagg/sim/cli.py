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

"""memagg-sim's command line: what would consolidation do with this cloud?

Replays a trace (a CSV file, or the built-in synthetic generator) in
virtual time through the consolidation round memagg-scheduler runs (the
same plug-ins and planner), once packing VMs by booked memory (Neat's
way) and once by working set (memagg's), and writes a JSON summary and
PNG plots comparing them. ``memagg-sim --help`` documents every option.
The console script (memagg.cmd.sim) runs :func:`main` once numpy and
matplotlib, the sim extra, import.

Exit status: 0 done, 1 the simulation failed, 2 bad input (one line on
stderr naming the option, or the file, line and field).
"""
import argparse
import dataclasses
import math
import os
import sys

from oslo_config import cfg

from memagg.common import cli
from memagg.common import exceptions
from memagg.common import plugins
from memagg.conf import consolidation as conf_consolidation
from memagg.conf import host_reclaim as conf_host_reclaim
from memagg.conf import reservoir as conf_reservoir
from memagg.conf import swapd as conf_swapd
from memagg.conf import wss as conf_wss
from memagg.drivers.host_reclaim import base as controller_base
from memagg.drivers.remote_budget import base as budget_base
from memagg.drivers.reservoir import base as selection_base
from memagg.scheduler import consolidation
from memagg.sim import engine
from memagg.sim import host_reclaim
from memagg.sim import maxavg
from memagg.sim import plots
from memagg.sim import progress as sim_progress
from memagg.sim import report
from memagg.sim import reservoir
from memagg.sim import runner
from memagg.sim import synthetic
from memagg.sim import trace as sim_trace

PROG = 'memagg-sim'
FAILED = 1
BASES = ('booked', 'wss')
DEFAULT_SEEDS = (0, 1, 2)
DEFAULT_HOSTS_CPUS = 32.0
DEFAULT_HOST_MEMORY_MB = 131072.0

DESCRIPTION = """\
Replay a trace of VM use in virtual time through memagg's consolidation
round (the plug-ins and planner memagg-scheduler runs) twice, packing VMs by
booked memory (memory_basis booked, Neat's way) and by working set (wss,
memagg's), and compare: hosts on over time, migrations by trigger, time in
memory overload (the VMs' working sets add up to more than the host's
memory and the remote memory they hold) and in cpu overload (they use more
cores than it has), and remote memory: in use, grant churn and the time
VMs ran partly remote. Writes summary.json and active_hosts.png,
migrations.png, overload.png to --output-dir.

Without --trace the built-in synthetic generator makes the trace.

memagg-sim sweep runs a grid of [consolidation] option values over several
seeds instead: memagg-sim sweep --help."""

EPILOG = """\
trace CSV (--trace): a header line naming the columns, then one row per VM
per time step, in any order:
  time       seconds from the start (number >= 0); the times lie on one grid
             whose step is the smallest gap between two of them
  vm         the VM's name
  booked_mb  its flavor RAM, MiB (> 0), the same on all its rows
  vcpus      its vCPUs (integer >= 1), the same on all its rows
  cpu        cores it used over the step (0 .. vcpus)
  wss_mb     its working set, MiB (0 .. booked_mb)
  host       optional: its host at its first row (later rows are not read);
             empty or absent: the placement plug-in places it
A VM runs from its first row to its last and needs a row at every step in
between. Example:
  time,vm,booked_mb,vcpus,cpu,wss_mb,host
  0,web-1,4096,2,0.5,1200,compute-1
  300,web-1,4096,2,0.7,1350,

hosts CSV (--hosts-file): host,cpus,memory_mb (memory VMs may use, MiB).

Simulation: each step, migrations of the last round land, VMs arrive and
leave, each host's cpu (cores used / cores) and memory (its VMs' WSS
max-average as in [wss] maxavg_*, or their booked memory for the booked
basis, over its memory) are appended to its histories (last history_length
samples, reset when the host powers on), hosts whose VMs' working sets
exceed their memory borrow other hosts' idle memory (within [reservoir]
max_remote_ratio of each VM's booked memory; --max-remote-ratio 0: no
remote memory), overload is counted (from the trace's cpu and wss_mb), and
every --round-interval a round plans over the hosts not busy with a
migration. A migration lands --migration-time later
(at least one step), a host emptied by a round powers off when its VMs
have left.

Exit status: 0 done, 1 the simulation failed, 2 bad input."""


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
_POSITIVE = _checked(float, lambda v: v > 0 and math.isfinite(v),
                     'a number > 0')
_NON_NEGATIVE = _checked(float, lambda v: v >= 0 and math.isfinite(v),
                         'a number >= 0')
_FRACTION = _checked(float, lambda v: 0 <= v <= 1, 'a number from 0 to 1')
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
_SYNTHETIC = (
    ('vms', POSITIVE_INT, 'VMs (default: %d per host).'
     % synthetic.Params.VMS_PER_HOST),
    ('days', _POSITIVE, 'Length of the trace in days (default %(d)s).'),
    ('step', _POSITIVE, 'Seconds between two samples (default %(d)s).'),
    ('used_ratio', _OPEN_FRACTION, 'Mean working set over booked memory '
     'across VMs (default %(d)s).'),
    ('used_spread', _NON_NEGATIVE, 'Standard deviation of that ratio across '
     'VMs (default %(d)s; ratios are clipped to 0.05..1).'),
    ('cpu_mean', _OPEN_FRACTION, 'Mean CPU use as a share of the VM\'s '
     'vCPUs (default %(d)s).'),
    ('cpu_spread', _NON_NEGATIVE, 'Standard deviation of that share across '
     'VMs (default %(d)s).'),
    ('diurnal_amplitude', _FRACTION, 'Daily CPU swing: use is multiplied by '
     '1 + A cos(2 pi (hour - peak) / 24) (default %(d)s).'),
    ('diurnal_peak_hour', _HOUR, 'Hour of the day of the CPU peak (default '
     '%(d)s).'),
    ('diurnal_phase_spread_hours', _NON_NEGATIVE, 'Standard deviation of '
     'each VM\'s peak hour around it (default %(d)s).'),
    ('mem_phase_hours', _POSITIVE, 'Mean length of a memory phase in hours; '
     'the working set changes level at each phase (default %(d)s).'),
    ('mem_phase_change', _FRACTION, 'A phase multiplies the working set by '
     'a factor drawn in 1 +- this (default %(d)s).'),
    ('mem_phase_sync', _FRACTION, 'Share of VMs that follow cloud-wide '
     'memory phases (same switch times and factors), so that working sets '
     'rise together (default %(d)s).'),
    ('noise', _NON_NEGATIVE, 'Relative noise on every CPU and working-set '
     'sample (default %(d)s).'),
    ('seed', _INT, 'Random seed; the same seed and parameters give the '
     'same trace (default %(d)s).'),
)

_NOT_OVERRIDDEN = ('memory_basis',)


def _consolidation_opts():
    """The [consolidation] options a round's algorithms are built from
    (except memory_basis: both are simulated), as oslo.config Opts."""
    by_name = {opt.dest: opt for opt in conf_consolidation.opts}
    return [by_name[name] for name in consolidation.OPTIONS
            if name not in _NOT_OVERRIDDEN]


def add_input_arguments(parser, seeds=False):
    """The "input" and "synthetic trace" argument groups; with ``seeds``,
    --seeds SEED[,SEED...] instead of --seed and --write-trace."""
    source = parser.add_argument_group('input')
    source.add_argument(
        '--trace', metavar='FILE',
        help='Trace CSV to replay (format below). Without it the synthetic '
             'generator makes one (options under "synthetic trace").')
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
        '--host-cpus', type=_POSITIVE, metavar='CORES',
        help='Cores of each host (default %g; not with --hosts-file).'
             % DEFAULT_HOSTS_CPUS)
    source.add_argument(
        '--host-memory-mb', type=_POSITIVE, metavar='MIB',
        help='Memory VMs may use on each host, MiB: RAM less what the host '
             'reserves (default %g; not with --hosts-file).'
             % DEFAULT_HOST_MEMORY_MB)

    gen = parser.add_argument_group(
        'synthetic trace (without --trace; see memagg.sim.synthetic)')
    defaults = synthetic.Params()
    for name, kind, text in _SYNTHETIC:
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
        '--maxavg-slice-s', type=_POSITIVE, metavar='SECONDS',
        help='Slice over which the WSS max-average keeps the largest '
             'average (default: [wss] maxavg_slice_s, 3600).')
    group.add_argument(
        '--round-interval', type=_POSITIVE, metavar='SECONDS',
        help='Virtual seconds between two consolidation rounds, rounded up '
             'to whole steps (default: every step, as Neat ran a round at '
             'each collection).')
    group.add_argument(
        '--migration-time', type=_NON_NEGATIVE, metavar='SECONDS',
        help='Virtual seconds a live migration takes before the VM runs on '
             'its destination, rounded up to whole steps, at least one '
             '(default: one step). Its hosts sit out rounds meanwhile, and '
             'the destination lends none of the memory the VM will use.')
    group.add_argument(
        '--max-remote-ratio', type=_FRACTION, metavar='X',
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
        '--remote-penalty', type=_NON_NEGATIVE, metavar='X',
        help='Extra cores a VM uses, as a share of the cores it uses, per '
             'share of its working set that is remote: page faults served '
             'over the network cost CPU time (default %g: half its working '
             'set remote, %g %%%% more cores). A model parameter, not a '
             'memagg option.'
             % (reservoir.Settings.penalty,
                50 * reservoir.Settings.penalty))
    group.add_argument(
        '--host-reclaim', metavar='NAME',
        help='Host reclaim controller, the plug-in memagg-compute runs: '
             'none or senpai (default: [host_reclaim] controller, none). '
             'Its other [host_reclaim] options (promotion_slo, grow_mb, '
             'backoff) come from --config-file; no host memory pressure is '
             'modelled.')
    group.add_argument(
        '--no-balloon', type=_FRACTION, metavar='X',
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


def build_parser():
    """memagg-sim's argument parser (every option has help)."""
    parser = Parser(prog=PROG, description=DESCRIPTION, epilog=EPILOG,
                    formatter_class=argparse.RawDescriptionHelpFormatter)
    add_input_arguments(parser)

    rounds = parser.add_argument_group(
        'consolidation', 'Each option overrides the [consolidation] or '
        '[wss] option of the same name\nof --config-file (or its '
        'default); both bases use the same.')
    add_simulation_arguments(rounds)
    for opt in _consolidation_opts():
        rounds.add_argument(
            '--' + opt.dest.replace('_', '-'), metavar='JSON'
            if opt.dest.endswith('_params') else 'NAME',
            help='%s (default: [consolidation] %s, %s)'
                 % (opt.help, opt.dest, opt.default))
    rounds.add_argument(
        '--history-length', type=POSITIVE_INT, metavar='N',
        help='Utilisation samples per host the detectors see (default: '
             '[consolidation] history_length, 288).')
    rounds.add_argument(
        '--remote-weight', type=_FRACTION, metavar='X',
        help='Share of the remote memory its VMs hold that counts as a '
             'host\'s memory for the rounds (default: [consolidation] '
             'remote_weight, 0).')

    out = parser.add_argument_group('output')
    out.add_argument(
        '--output-dir', metavar='DIR', default='memagg-sim-output',
        help='Directory for summary.json and the PNG plots (created; '
             'default %(default)s).')
    out.add_argument(
        '--no-plots', action='store_true',
        help='Write summary.json only.')
    out.add_argument(
        '--jobs', type=POSITIVE_INT, metavar='N',
        default=runner.default_jobs(),
        help='Processes: 2 runs the two bases side by side (default '
             '%(default)s here: one per basis, at most one per core).')
    add_noise_arguments(out)
    return parser


def load_config(path):
    """The [consolidation], [wss], [reservoir], [swapd] and [host_reclaim]
    options of ``path`` (None: defaults), in a private ConfigOpts."""
    conf = cfg.ConfigOpts()
    for group in (conf_consolidation, conf_wss, conf_reservoir, conf_swapd,
                  conf_host_reclaim):
        group.register_opts(conf)
    try:
        conf(['--config-file', path] if path else [], project='memagg',
             prog=PROG, default_config_files=[], default_config_dirs=[])
    except cfg.Error as error:
        raise cli.UsageError('argument --config-file: %s' % error)
    return conf


def _option(conf, group, name, given):
    if given is not None:
        return given
    try:
        return plugins.option_value(conf, group, name)
    except exceptions.InvalidParameter as error:
        raise cli.UsageError(error.message)


def _synthetic_params(args):
    values = {name: getattr(args, name) for name, _, _ in _SYNTHETIC
              if getattr(args, name) is not None}
    for name, option in (('hosts', args.hosts),
                         ('host_cpus', args.host_cpus),
                         ('host_memory_mb', args.host_memory_mb)):
        if option is not None:
            values[name] = option
    params = synthetic.Params(**values)
    try:
        trace, hosts = synthetic.generate(params)
    except ValueError as error:
        name, _, reason = str(error).partition(': ')
        raise cli.UsageError('argument --%s: %s'
                             % (name.replace('_', '-'), reason))
    info = {'source': 'synthetic', 'synthetic': dataclasses.asdict(params)}
    info['synthetic']['vms'] = params.vm_count
    return trace, hosts, trace.initial_host, info


def _trace_input(args):
    for name, _, _ in _SYNTHETIC:
        if getattr(args, name) is not None:
            raise cli.UsageError('argument --%s: only for the synthetic '
                                 'trace; leave it out with --trace'
                                 % name.replace('_', '-'))
    trace = sim_trace.read_trace(args.trace)
    if args.hosts_file:
        for option, value in (('--host-cpus', args.host_cpus),
                              ('--host-memory-mb', args.host_memory_mb)):
            if value is not None:
                raise cli.UsageError(
                    'argument %s: not with --hosts-file (the file gives '
                    'each host\'s)' % option)
        hosts = sim_trace.read_hosts(args.hosts_file)
    else:
        if args.hosts is None and not trace.host_names:
            raise cli.UsageError(
                'argument --hosts: the trace names no hosts; give --hosts '
                'N or --hosts-file FILE')
        try:
            hosts = sim_trace.make_hosts(
                args.hosts,
                args.host_cpus or DEFAULT_HOSTS_CPUS,
                args.host_memory_mb or DEFAULT_HOST_MEMORY_MB,
                trace.host_names)
        except ValueError as error:
            raise cli.UsageError('argument --hosts: %s' % error)
    initial = sim_trace.initial_hosts(trace, hosts, args.hosts_file)
    return trace, hosts, initial, {'source': os.path.abspath(args.trace)}


#: The attributes of parsed arguments that inputs() reads.
INPUT_OPTIONS = (('trace', 'hosts_file', 'hosts', 'host_cpus',
                  'host_memory_mb')
                 + tuple(name for name, _, _ in _SYNTHETIC))


def inputs(args):
    """The trace, its hosts, each VM's initial host index (-1: to place)
    and a description of the trace for the summary, from the INPUT_OPTIONS
    of ``args``; raises cli.UsageError or TraceError for bad input."""
    if args.trace:
        return _trace_input(args)
    if args.hosts_file:
        raise cli.UsageError('argument --hosts-file: only with --trace (the '
                             'synthetic trace uses --hosts identical hosts)')
    return _synthetic_params(args)


def describe(trace, hosts, info):
    """The trace's description for a summary: ``info`` (from inputs())
    with its length and size."""
    step = trace.step_s
    return dict(info, steps=trace.steps, step_s=step,
                duration_s=trace.steps * step, vms=trace.vms,
                hosts=len(hosts))


#: The [consolidation] options the loop reads itself (the planner's are
#: consolidation.OPTIONS).
_LOOP_OPTIONS = ('history_length', 'remote_weight')

#: The [reservoir] options the reservoir model reads.
RESERVOIR_OPTIONS = ('max_remote_ratio', 'remote_budget', 'tlp_step_percent',
                     'tlp_slack_threshold', 'donor_reserve_mb',
                     'slab_size_mb', 'donor_selection',
                     'donor_selection_params')


def simulated_options():
    """The names of the [consolidation] options a simulation depends on:
    the planner's (consolidation.OPTIONS but memory_basis: each basis is
    simulated) and the loop's."""
    return [opt.dest for opt in _consolidation_opts()] + list(_LOOP_OPTIONS)


@dataclasses.dataclass(frozen=True)
class Config:
    """What a simulation runs with, resolved from the configuration file
    and the command line. Picklable: memagg-sim sweep's worker processes
    build from it the very simulation memagg-sim runs.

    ``consolidation`` holds every option of simulated_options();
    ``round_interval_s`` and ``migration_time_s`` are virtual seconds
    (None: one step); ``reservoir`` holds the RESERVOIR_OPTIONS,
    ``remote_memory`` (whether VMs borrow at all) and ``remote_penalty``
    (None: no remote memory); ``host_reclaim`` the [host_reclaim] options
    of controller_base.Params, ``controller`` and ``no_balloon`` (the
    share of VMs without a balloon; None: no host reclaim model).
    """

    consolidation: dict
    maxavg_samples: int
    maxavg_slice_s: float
    round_interval_s: float = None
    migration_time_s: float = None
    reservoir: dict = None
    host_reclaim: dict = None

    def algorithms(self, basis):
        """The round's plug-ins packing by ``basis``; cli.UsageError naming
        the option when one is wrong."""
        group = argparse.Namespace(**self.consolidation)
        try:
            return consolidation.load_algorithms(group,
                                                 {'memory_basis': basis})
        except exceptions.InvalidParameter as error:
            raise cli.UsageError(error.message)

    def settings(self, step_s):
        """The loop's engine.Settings for a trace of ``step_s`` steps."""
        migration_s = (step_s if self.migration_time_s is None
                       else self.migration_time_s)
        round_s = (step_s if self.round_interval_s is None
                   else self.round_interval_s)
        return engine.Settings(
            history_length=self.consolidation['history_length'],
            migration_steps=max(1, math.ceil(migration_s / step_s - 1e-9)),
            round_steps=max(1, math.ceil(round_s / step_s - 1e-9)),
            remote_weight=self.consolidation['remote_weight'])

    @property
    def remote_memory(self):
        """Whether VMs borrow remote memory."""
        return bool(self.reservoir and self.reservoir['remote_memory'])

    def remote_plugins(self):
        """The remote budget and donor selection plug-ins memagg-compute
        and memagg-scheduler would load (None without remote memory);
        cli.UsageError naming the option when one is wrong."""
        if not self.remote_memory:
            return None
        group = argparse.Namespace(**{name: self.reservoir[name]
                                      for name in RESERVOIR_OPTIONS})
        try:
            return (budget_base.load({budget_base.GROUP: group}),
                    selection_base.load_from_group(group))
        except exceptions.InvalidParameter as error:
            raise cli.UsageError(error.message)

    def reservoir_model(self, trace, hosts):
        """The reservoir.Model of the trace (None without remote
        memory)."""
        plugins = self.remote_plugins()
        if plugins is None:
            return None
        settings = reservoir.Settings(
            max_remote_ratio=self.reservoir['max_remote_ratio'],
            donor_reserve_mb=self.reservoir['donor_reserve_mb'],
            slab_size_mb=self.reservoir['slab_size_mb'],
            penalty=self.reservoir['remote_penalty'])
        return reservoir.Model(settings, *plugins, trace, hosts)

    def reclaim_controller(self):
        """The host reclaim controller memagg-compute would load (None
        without the host reclaim model); cli.UsageError naming the option
        when one is wrong."""
        if self.host_reclaim is None:
            return None
        options = {k: v for k, v in self.host_reclaim.items()
                   if k != 'no_balloon'}
        try:
            return controller_base.load(
                {controller_base.GROUP: argparse.Namespace(**options)})
        except exceptions.InvalidParameter as error:
            raise cli.UsageError(error.message)

    def host_reclaim_model(self, trace, wss_maxavg):
        """The host_reclaim.Model of the trace (None without one)."""
        controller = self.reclaim_controller()
        if controller is None:
            return None
        return host_reclaim.Model(controller, trace, wss_maxavg,
                                  balloon=host_reclaim.balloons(
                                      trace.vms,
                                      self.host_reclaim['no_balloon']))

    def wss_maxavg(self, trace):
        """Every VM's WSS max-average at every step of ``trace``."""
        return maxavg.maxavg(trace.wss_mb, trace.first, self.maxavg_samples,
                             self.maxavg_slice_s, trace.step_s)

    def simulation(self, trace, hosts, initial, wss_maxavg, algorithms):
        """The engine.Simulation of ``algorithms`` (from algorithms(), whose
        basis it packs by) over the trace."""
        return engine.Simulation(trace, hosts, initial, wss_maxavg,
                                 algorithms, algorithms.memory_basis,
                                 self.settings(trace.step_s),
                                 self.reservoir_model(trace, hosts),
                                 self.host_reclaim_model(trace, wss_maxavg))

    def info(self, step_s):
        """The settings as summary.json records them."""
        settings = self.settings(step_s)
        return {
            'history_length': settings.history_length,
            'remote_weight': settings.remote_weight,
            'reservoir': dict(self.reservoir or {}),
            'host_reclaim': (None if self.host_reclaim is None
                             else dict(self.host_reclaim)),
            'maxavg_samples': self.maxavg_samples,
            'maxavg_slice_s': self.maxavg_slice_s,
            'migration_time_s': settings.migration_steps * step_s,
            'round_interval_s': settings.round_steps * step_s,
            'consolidation': {name: value for name, value
                              in self.consolidation.items()
                              if name not in _LOOP_OPTIONS},
        }


def _reservoir(conf, args):
    """The Config.reservoir of ``conf`` with the --max-remote-ratio,
    --remote-budget and --remote-penalty of ``args`` over it. As
    memagg-compute, no VM borrows without memagg-swapd ([swapd] enabled) or
    with [swapd] auto_grant off, nor with a cap of 0."""
    values = {name: _option(conf, 'reservoir', name,
                            getattr(args, name, None))
              for name in RESERVOIR_OPTIONS}
    values['remote_memory'] = bool(
        _option(conf, 'swapd', 'enabled', None)
        and _option(conf, 'swapd', 'auto_grant', None)
        and values['max_remote_ratio'] > 0)
    values['remote_penalty'] = (reservoir.Settings.penalty
                                if args.remote_penalty is None
                                else args.remote_penalty)
    return values


def _host_reclaim(conf, args):
    """The Config.host_reclaim of ``conf`` with --host-reclaim and
    --no-balloon of ``args`` over it; None when no controller runs and
    every VM has a balloon (the model would change nothing)."""
    values = {f.name: _option(conf, controller_base.GROUP, f.name, None)
              for f in dataclasses.fields(controller_base.Params)}
    values['controller'] = _option(conf, controller_base.GROUP,
                                   'controller',
                                   getattr(args, 'host_reclaim', None))
    values['no_balloon'] = getattr(args, 'no_balloon', None) or 0.0
    if values['controller'] == 'none' and not values['no_balloon']:
        return None
    return values


def configure(conf, given, args):
    """The Config of ``conf`` (load_config) with ``given`` (an option of
    simulated_options() -> its value; None or absent: not given) and the
    --maxavg-*, --round-interval, --migration-time and remote memory
    options of ``args`` over it."""
    values = {name: _option(conf, 'consolidation', name, given.get(name))
              for name in simulated_options()}
    return Config(
        consolidation=values,
        maxavg_samples=_option(conf, 'wss', 'maxavg_samples',
                               args.maxavg_samples),
        maxavg_slice_s=_option(conf, 'wss', 'maxavg_slice_s',
                               args.maxavg_slice_s),
        round_interval_s=args.round_interval,
        migration_time_s=args.migration_time,
        reservoir=_reservoir(conf, args),
        host_reclaim=_host_reclaim(conf, args))


def simulate(args, stdout, stderr):
    """Run memagg-sim for parsed ``args``; raises cli.UsageError or
    TraceError for bad input."""
    conf = load_config(args.config_file)
    config = configure(conf, {name: getattr(args, name)
                              for name in simulated_options()}, args)
    algorithms = {basis: config.algorithms(basis) for basis in BASES}
    config.remote_plugins()
    config.reclaim_controller()
    if args.trace and args.write_trace:
        raise cli.UsageError('argument --write-trace: only for the '
                             'synthetic trace; leave it out with --trace')
    trace, hosts, initial, trace_info = inputs(args)
    if args.write_trace:
        sim_trace.write_trace(trace, args.write_trace)
    try:
        os.makedirs(args.output_dir, exist_ok=True)
    except OSError as error:
        raise cli.UsageError('argument --output-dir: cannot create %s: %s'
                             % (args.output_dir, error.strerror or error))

    wss_maxavg = config.wss_maxavg(trace)
    simulations = {
        basis: config.simulation(trace, hosts, initial, wss_maxavg,
                                 algorithms[basis])
        for basis in BASES}
    bar = sim_progress.Progress(trace.steps * len(simulations), stderr,
                                show_progress(args, stderr))
    results = runner.run(simulations, args.jobs, bar)

    summary = report.summary(results, describe(trace, hosts, trace_info),
                             config.info(trace.step_s))
    written = [os.path.join(args.output_dir, 'summary.json')]
    report.write(summary, written[0])
    if not args.no_plots:
        written += plots.write_all(results, args.output_dir)
    if not args.quiet:
        stdout.write(report.text(summary) + '\n')
        stdout.write('wrote %s\n' % ', '.join(written))
    return summary


def last_line(error):
    """The last line of ``error``'s message (a child's traceback ends with
    what went wrong), or its type when it has none."""
    lines = str(error).strip().splitlines()
    return lines[-1] if lines else type(error).__name__


def run_command(prog, parser, command, argv):
    """Parse ``argv`` with ``parser`` and run ``command(args, stdout,
    stderr)``; the exit status, a mistake or failure told in one line on
    stderr."""
    try:
        command(parser.parse_args(argv), sys.stdout, sys.stderr)
    except (cli.UsageError, sim_trace.TraceError) as error:
        return cli.fail(prog, str(error))
    except RuntimeError as error:
        return cli.fail(prog, last_line(error), FAILED)
    return 0


def main(argv=None):
    """memagg-sim on ``argv`` (default: the command line); the exit
    status. memagg-sim sweep is memagg.sim.sweep's."""
    argv = sys.argv[1:] if argv is None else list(argv)
    return run_command(PROG, build_parser(), simulate, argv)


if __name__ == '__main__':
    sys.exit(main())
