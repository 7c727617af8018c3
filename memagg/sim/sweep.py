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

"""memagg-sim sweep: a grid of [consolidation] option values over several
seeds, to choose the options on the front of hosts saved against
migrations and overload (ALGORITHMS.md §3.6).

Each setting of the grid is simulated packing by working set (memagg-sim's
``wss`` basis, built from the options exactly as memagg-sim builds it:
memagg.sim.config.Config) over the trace of each seed, and compared with the
booked basis under the configuration file's options (or the defaults),
simulated once per seed. The simulations run in worker processes; one
simulation is a picklable Job run by run_job.

Writes sweep.csv (one row per setting: means over the seeds and their
standard deviations, and whether the setting is on the Pareto front),
sweep.json (the same with every seed's figures, the reference's and the
settings used) and sweep.png (memagg.sim.plots.sweep).
"""
import argparse
import concurrent.futures as futures
import dataclasses
import itertools
import multiprocessing
import os
import textwrap
import time

from memagg.common import cli as common_cli
from memagg.conf import consolidation as conf_consolidation
from memagg.sim import arguments
from memagg.sim import cli
from memagg.sim import config as sim_config
from memagg.sim import inputs as sim_inputs
from memagg.sim import plots
from memagg.sim import progress as sim_progress
from memagg.sim import report
from memagg.sim import sweep_table

PROG = arguments.PROG + ' sweep'
SCHEMA_VERSION = 1
FILES = ('sweep.csv', 'sweep.json', 'sweep.png')

DESCRIPTION = """\
Simulate a grid of [consolidation] option values over the traces of several
seeds, or of trace files, or both, in parallel, and compare each setting
with packing by booked memory:
hosts saved, migrations (and the share triggered by memory overload), and
memory and cpu overload, with the settings on the Pareto front of hosts
saved against migrations and overload marked. Writes sweep.csv, sweep.json
and sweep.png to --output-dir and prints the table and the wall time.

Each setting packs by working set (memagg-sim's wss basis) with the
--config-file options (or the defaults) and its --set values over them;
the reference, packing by booked memory with the --config-file options
alone, runs once per trace."""

EPILOG = """\
grid (--set NAME=VALUE[,VALUE...], repeated for each option swept):
  NAME is a [consolidation] option (memagg.conf). Values are separated by
  commas outside brackets and double quotes, so that JSON parameters are
  written as they are; values containing other commas cannot be swept. The
  grid is every combination of the values, the first --set varying slowest.
  Example (2 x 2 settings):
    --set overload_cpu_params='{"otf": 0.1}','{"otf": 0.2}' \\
    --set history_length=50,100
%s

table (sweep.csv, printed): one row per setting, means over the traces
(seeds and files) and their standard deviations (_sd): hosts_saved_pct,
the share of the booked reference's mean active hosts the setting leaves
off; active_hosts (mean over the trace); migrations (total),
migrations_per_vm_day, migrations_vs_booked (against the reference's) and
memory_triggered_pct, the share of them whose trigger includes memory
overload; memory_overload_pct and
cpu_overload_pct, the share of active host time in each overload;
remote_pct, the share of VM time VMs ran partly remote, and grant_churn,
grants made and ended (0 without remote memory). pareto: no other setting
saves at least as many hosts with at most as many migrations per VM per
day, at most as much overload (memory + cpu) and at most as much time
partly remote, and does better in one of them. Over several trace files,
each trace's figures of each setting are printed after the table.

Exit status: 0 done, 1 a simulation failed, 2 bad input."""


def build_parser():
    """memagg-sim sweep's argument parser (every option has help)."""
    parser = arguments.Parser(
        prog=PROG, description=DESCRIPTION,
        epilog=EPILOG % textwrap.fill(
            'Options the simulation depends on: %s.'
            % ', '.join(sim_config.simulated_options()), 76,
            initial_indent='  ', subsequent_indent='  '),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    arguments.add_input_arguments(parser, seeds=True)
    grid = parser.add_argument_group(
        'grid', 'The options every setting and the reference run with, '
        'and the grid of settings.')
    arguments.add_simulation_arguments(grid)
    grid.add_argument(
        '--set', action='append', metavar='NAME=VALUE[,VALUE...]',
        default=[],
        help='A [consolidation] option and the values to try (syntax '
             'below); repeat for each option swept. Without any: one '
             'setting, the --config-file options.')
    out = parser.add_argument_group('output')
    out.add_argument(
        '--output-dir', metavar='DIR', default='memagg-sim-sweep',
        help='Directory for %s (created; default %%(default)s).'
             % ', '.join(FILES))
    out.add_argument(
        '--workers', type=arguments.POSITIVE_INT, metavar='N',
        default=os.cpu_count() or 1,
        help='Worker processes running simulations (default %(default)s '
             'here: one per core).')
    arguments.add_noise_arguments(out)
    return parser


def _split(text):
    """``text`` cut at the commas outside brackets and double quotes, each
    part stripped; None when the brackets or quotes do not balance."""
    parts, start, depth, quoted, escaped = [], 0, 0, False, False
    for i, char in enumerate(text):
        if quoted:
            if escaped:
                escaped = False
            elif char == '\\':
                escaped = True
            elif char == '"':
                quoted = False
        elif char == '"':
            quoted = True
        elif char in '[{':
            depth += 1
        elif char in ']}':
            depth -= 1
            if depth < 0:
                return None
        elif char == ',' and not depth:
            parts.append(text[start:i].strip())
            start = i + 1
    if quoted or depth:
        return None
    parts.append(text[start:].strip())
    return parts


def parse_grid(texts):
    """The grid of --set ``texts``: [(option name, [(value as given,
    value), ...]), ...] in their order, each value converted by its
    option's type.

    Option names are those registered in the [consolidation] group
    (memagg.conf.consolidation) that the simulation depends on
    (sim_config.simulated_options). A mistake raises cli.UsageError naming
    the option.
    """
    registered = {opt.dest: opt for opt in conf_consolidation.opts}
    sweepable = sim_config.simulated_options()

    def error(message):
        return common_cli.UsageError('argument --set: ' + message)

    grid = []
    for text in texts:
        name, equals, values = text.partition('=')
        name = name.strip()
        if not equals or not name:
            raise error('expected NAME=VALUE[,VALUE...], got %r' % text)
        if name not in registered:
            raise error('no [consolidation] option %r; sweep one of %s'
                        % (name, ', '.join(sweepable)))
        if name == 'memory_basis':
            raise error('memory_basis: every setting packs by working set '
                        '(wss), compared with booked memory; it is not '
                        'swept')
        if name not in sweepable:
            raise error('%s: memagg-sim does not simulate this option; '
                        'sweep one of %s' % (name, ', '.join(sweepable)))
        if any(name == swept for swept, _ in grid):
            raise error('%s: given twice; list all its values in one --set'
                        % name)
        parts = _split(values)
        if parts is None:
            raise error('%s: brackets or double quotes do not balance in %r'
                        % (name, values))
        converted = []
        for part in parts:
            if not part:
                raise error('%s: empty value in %r' % (name, values))
            try:
                value = registered[name].type(part)
            except ValueError as exc:
                raise error('%s: %s (value %r)' % (name, exc, part))
            if any(value == known for _, known in converted):
                raise error('%s: value %r given twice' % (name, part))
            converted.append((part, value))
        grid.append((name, converted))
    return grid


def settings(grid):
    """Every combination of the grid's values, the first option varying
    slowest: a list of {option name: (value as given, value)}."""
    names = [name for name, _ in grid]
    return [dict(zip(names, combination)) for combination
            in itertools.product(*(values for _, values in grid))]


@dataclasses.dataclass(frozen=True)
class Job:
    """One simulation of a sweep: ``basis`` packing with ``config`` over
    the trace of ``source`` (the sim_inputs.INPUT_OPTIONS, seed included).
    ``index`` is its place among the sweep's jobs (and its progress
    counter's); ``label`` names it in an error."""

    index: int
    label: str
    source: argparse.Namespace
    config: sim_config.Config
    basis: str


#: This process's inputs of the latest trace it simulated (see _prepared)
#: and its jobs' steps done (see _start_worker).
_PREPARED = {}
_STEPS_DONE = None


def _prepared(source, config):
    """The trace, hosts, initial hosts, trace description and WSS
    max-average of ``source`` under ``config``, made once per process.

    Only the latest is kept: a 1,000-host week takes hundreds of MiB, and
    jobs come seed after seed. Workers forked after the parent prepared the
    first trace find it here.
    """
    key = (tuple(sorted(vars(source).items())), config.maxavg_samples,
           config.maxavg_slice_s)
    if key not in _PREPARED:
        _PREPARED.clear()
        trace, hosts, initial, info = sim_inputs.inputs(source)
        _PREPARED[key] = (trace, hosts, initial, info,
                          config.wss_maxavg(trace))
    return _PREPARED[key]


def _start_worker(steps_done):
    global _STEPS_DONE
    _STEPS_DONE = steps_done


def vm_days(trace):
    """VM-days of ``trace``: its VMs times its length in days."""
    return trace.vms * trace.steps * trace.step_s / 86400.0


def run_job(job):
    """Simulate ``job`` in this process; its report.basis_summary."""
    trace, hosts, initial, _, wss_maxavg = _prepared(job.source, job.config)
    simulation = job.config.simulation(trace, hosts, initial, wss_maxavg,
                                       job.config.algorithms(job.basis))

    def progress(done):
        _STEPS_DONE[job.index] = done
    return report.basis_summary(simulation.run(
        None if _STEPS_DONE is None else progress))


def run_jobs(jobs, workers, bar):
    """Run ``jobs`` in ``workers`` forked processes (the trace prepared
    here is shared with them, not copied); their summaries, in order.
    ``bar`` (memagg.sim.progress.Progress) counts the steps of all jobs.
    Raises RuntimeError naming the job when one fails."""
    context = multiprocessing.get_context('fork')
    steps_done = context.RawArray('q', len(jobs))
    summaries = [None] * len(jobs)
    try:
        with futures.ProcessPoolExecutor(
                min(workers, len(jobs)), mp_context=context,
                initializer=_start_worker,
                initargs=(steps_done,)) as pool:
            pending = {pool.submit(run_job, job): job for job in jobs}
            while pending:
                done, _ = futures.wait(pending, timeout=0.2,
                                       return_when=futures.FIRST_COMPLETED)
                for future in done:
                    job = pending.pop(future)
                    try:
                        summaries[job.index] = future.result()
                    except Exception as error:
                        pool.shutdown(cancel_futures=True)
                        raise RuntimeError('%s: %s' % (
                            job.label, cli.last_line(error))) from error
                bar.update(sum(steps_done))
    finally:
        bar.close()
    return summaries


def _source(args, seed):
    """The input options of one seed's synthetic trace (sim_inputs.inputs
    reads them); beside trace files, of the generator's hosts."""
    values = {name: getattr(args, name) for name in sim_inputs.INPUT_OPTIONS
              if name not in ('seed', 'trace')}
    if args.trace:
        values.update(hosts=None, hosts_file=None, host_cpus=None,
                      host_memory_mb=None)
    return argparse.Namespace(seed=seed, trace=None, **values)


def _trace_source(args, path):
    """The input options of trace file ``path``: the hosts options, and
    none of the generator's."""
    values = {name: None for name in sim_inputs.INPUT_OPTIONS}
    values.update(trace=path, hosts=args.hosts, hosts_file=args.hosts_file,
                  host_cpus=args.host_cpus,
                  host_memory_mb=args.host_memory_mb)
    return argparse.Namespace(**values)


def _sources(args):
    """The sweep's traces, in order: {label: input options}. A seed's
    label is the seed; a file's its name (None for a sole file, as
    before several could be given), made unique by its place."""
    traces = args.trace or []
    if traces and args.seeds is None:
        for name, _, _ in arguments.SYNTHETIC:
            if name != 'seed' and getattr(args, name) is not None:
                raise common_cli.UsageError(
                    'argument --%s: only for the synthetic trace; add '
                    '--seeds to sweep synthetic traces beside --trace'
                    % name.replace('_', '-'))
        seeds = []
    else:
        seeds = list(args.seeds or arguments.DEFAULT_SEEDS)
    sources = {}
    for path in traces:
        if traces.count(path) > 1:
            raise common_cli.UsageError('argument --trace: %s given twice'
                                        % path)
    for k, path in enumerate(traces):
        label = os.path.basename(path)
        if label in sources:
            label = '%s#%d' % (label, k + 1)
        sources[label] = _trace_source(args, path)
    if len(traces) == 1 and not seeds:
        sources = {None: sources[label]}
    for seed in seeds:
        sources[seed] = _source(args, seed)
    return sources


def sweep(args, stdout, stderr):
    """Run memagg-sim sweep for parsed ``args``; raises cli.UsageError or
    TraceError for bad input, RuntimeError when a simulation fails."""
    started = time.perf_counter()
    grid = parse_grid(args.set)
    names = [name for name, _ in grid]
    conf = sim_config.load_config(args.config_file)
    base = sim_config.configure(conf, {}, args)
    base.algorithms('booked')
    base.remote_plugins()
    configs = []
    for values in settings(grid):
        config = sim_config.configure(
            conf, {name: value for name, (_, value) in values.items()}, args)
        try:
            config.algorithms('wss')
        except common_cli.UsageError as error:
            raise common_cli.UsageError('argument --set: %s' % error)
        configs.append(config)
    sources = _sources(args)
    seeds = list(sources)
    # Each trace once here: its length for the progress bar, its
    # description for sweep.json (and a bad file stops the sweep before
    # any simulation). The first last, so that it is the one kept
    # (_prepared) when the workers fork: they start on it.
    described, steps, days = {}, {}, {}
    for label in reversed(seeds):
        trace, hosts, _, info, _ = _prepared(sources[label], base)
        described[label] = sim_inputs.describe(trace, hosts, info)
        steps[label], days[label] = trace.steps, vm_days(trace)
    described = {label: described[label] for label in seeds}
    try:
        os.makedirs(args.output_dir, exist_ok=True)
    except OSError as error:
        raise common_cli.UsageError(
            'argument --output-dir: cannot create %s: %s'
            % (args.output_dir, error.strerror or error))

    # Trace after trace, so that each worker makes each trace once at most.
    jobs = []
    for seed in seeds:
        what = ('trace %s' % seed if isinstance(seed, str)
                else 'seed %s' % seed)
        jobs.append(Job(len(jobs), 'booked reference, %s' % what,
                        sources[seed], base, 'booked'))
        for number, config in enumerate(configs, 1):
            jobs.append(Job(len(jobs), 'setting %d, %s' % (number, what),
                            sources[seed], config, 'wss'))
    bar = sim_progress.Progress(
        sum(steps[seed] for seed in seeds) * (len(configs) + 1), stderr,
        arguments.show_progress(args, stderr))
    summaries = run_jobs(jobs, args.workers, bar)
    by_job = iter(summaries)
    reference, results = {}, [{} for _ in configs]
    for seed in seeds:
        reference[seed] = next(by_job)
        for per_seed in results:
            per_seed[seed] = next(by_job)

    rows = sweep_table.table(settings(grid), reference, results, days)
    booked = sweep_table.spread({
        seed: sweep_table.figures(summary, summary, days[seed])
        for seed, summary in reference.items()})
    paths = [os.path.join(args.output_dir, name) for name in FILES]
    sweep_table.write_csv(rows, names, paths[0])
    plots.sweep(rows, booked, paths[2])
    for info in described.values():
        if 'synthetic' in info:
            # The seeds are the sweep's.
            info['synthetic'] = {name: value for name, value
                                 in info['synthetic'].items()
                                 if name != 'seed'}
    wall = time.perf_counter() - started
    record = {
        'version': SCHEMA_VERSION, 'trace': described[seeds[0]],
        'traces': {str(label): info for label, info in described.items()},
        'seeds': seeds,
        'settings': base.info(described[seeds[0]]['step_s']),
        'grid': {name: [text for text, _ in values]
                 for name, values in grid},
        'reference': booked, 'rows': rows, 'workers': args.workers,
        'wall_time_s': round(wall, 3)}
    report.write(record, paths[1])
    if not args.quiet:
        stdout.write(sweep_table.text(rows, names, booked, seeds) + '\n')
        stdout.write('wrote %s\n' % ', '.join(paths))
        unit = ('seed' if all(isinstance(seed, int) for seed in seeds)
                else 'trace')
        stdout.write('%d settings x %d %ss, and the booked reference per '
                     '%s: %d simulations on %d workers, wall time %.1f s\n'
                     % (len(rows), len(seeds), unit, unit, len(jobs),
                        min(args.workers, len(jobs)), wall))
    return record


def main(argv):
    """memagg-sim sweep on ``argv`` (the arguments after ``sweep``); the
    exit status."""
    return cli.run_command(PROG, build_parser(), sweep, argv)
