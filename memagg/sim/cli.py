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
import os
import sys

from memagg.common import cli
from memagg.sim import arguments
from memagg.sim import config as sim_config
from memagg.sim import inputs as sim_inputs
from memagg.sim import plots
from memagg.sim import progress as sim_progress
from memagg.sim import report
from memagg.sim import runner
from memagg.sim import trace as sim_trace

PROG = arguments.PROG
FAILED = 1
BASES = ('booked', 'wss')

DESCRIPTION = """\
Replay a trace of VM use in virtual time through memagg's consolidation
round (the plug-ins and planner memagg-scheduler runs) twice, packing VMs by
booked memory (memory_basis booked, Neat's way) and by working set (wss,
memagg's), and compare: hosts on over time, migrations by trigger, time in
memory overload (the VMs' working sets add up to more than the host's
memory and the remote memory they hold) and in cpu overload (they use more
cores than it has), and remote memory: in use, grant churn and the time
VMs ran partly remote.

Files written to --output-dir:
  summary.json       the figures of both bases (see the documentation)
  active_hosts.png   hosts on over time
  migrations.png     migrations per hour over time by trigger (log scale),
                     the first round's (step 0) apart, the steady rate
                     after it, and the totals by trigger
  overload.png       hosts in memory and cpu overload over time, and the
                     share of host time overloaded
  remote.png         remote memory in use and granted over time

Without --trace the built-in synthetic generator makes the trace.

memagg-sim sweep runs a grid of [consolidation] option values over several
seeds instead: memagg-sim sweep --help.

memagg-sim import converts a public trace (GWA-T-12 Bitbrains, Alibaba
cluster-trace-v2018, Google cluster-data 2019) into a trace CSV for
--trace: memagg-sim import --help."""

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


def build_parser():
    """memagg-sim's argument parser (every option has help)."""
    parser = arguments.Parser(
        prog=PROG, description=DESCRIPTION, epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    arguments.add_input_arguments(parser)

    rounds = parser.add_argument_group(
        'consolidation', 'Each option overrides the [consolidation] or '
        '[wss] option of the same name\nof --config-file (or its '
        'default); both bases use the same.')
    arguments.add_simulation_arguments(rounds)
    for opt in sim_config.consolidation_opts():
        rounds.add_argument(
            '--' + opt.dest.replace('_', '-'), metavar='JSON'
            if opt.dest.endswith('_params') else 'NAME',
            help='%s (default: [consolidation] %s, %s)'
                 % (opt.help, opt.dest, opt.default))
    rounds.add_argument(
        '--history-length', type=arguments.POSITIVE_INT, metavar='N',
        help='Utilisation samples per host the detectors see (default: '
             '[consolidation] history_length, 288).')
    rounds.add_argument(
        '--remote-weight', type=arguments.FRACTION, metavar='X',
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
        '--jobs', type=arguments.POSITIVE_INT, metavar='N',
        default=runner.default_jobs(),
        help='Processes: 2 runs the two bases side by side (default '
             '%(default)s here: one per basis, at most one per core).')
    arguments.add_noise_arguments(out)
    return parser


def simulate(args, stdout, stderr):
    """Run memagg-sim for parsed ``args``; raises cli.UsageError or
    TraceError for bad input."""
    conf = sim_config.load_config(args.config_file)
    config = sim_config.configure(
        conf, {name: getattr(args, name)
               for name in sim_config.simulated_options()}, args)
    algorithms = {basis: config.algorithms(basis) for basis in BASES}
    config.remote_plugins()
    config.reclaim_controller()
    if args.trace and args.write_trace:
        raise cli.UsageError('argument --write-trace: only for the '
                             'synthetic trace; leave it out with --trace')
    trace, hosts, initial, trace_info = sim_inputs.inputs(args)
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
                                arguments.show_progress(args, stderr))
    results = runner.run(simulations, args.jobs, bar)

    summary = report.summary(results,
                             sim_inputs.describe(trace, hosts, trace_info),
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
