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

"""memagg-sim import: a public trace converted into memagg-sim's trace CSV
(and a hosts CSV), by the importer plug-in (memagg.sim.importers,
entry-point namespace ``memagg.sim.importers``) named FORMAT.

Exit status: 0 done, 1 nothing left to write, 2 bad input (one line on
stderr naming the option, or the file, line and column).
"""
import argparse
import calendar
import math
import os
import sys
import tempfile
import time as time_module

from memagg.common import cli
from memagg.common import exceptions
from memagg.common import plugins
from memagg.sim import arguments
from memagg.sim import progress as sim_progress
from memagg.sim import trace as sim_trace
from memagg.sim.importers import base
from memagg.sim.importers import series

PROG = arguments.PROG + ' import'
NAMESPACE = 'memagg.sim.importers'
DEFAULT_MAX_GAP_S = 1800.0
DEFAULT_CHUNK_MB = 16.0
NOTHING_WRITTEN = 1
DATE_FORMATS = ('%Y-%m-%d', '%Y-%m-%dT%H:%M', '%Y-%m-%dT%H:%M:%S')

DESCRIPTION = """\
Convert a public trace into memagg-sim's trace CSV (memagg-sim --help
describes it), one VM at a time in bounded memory, then print how many
input rows were dropped and why, and the rows, VMs and steps written.
Replay it with:
  memagg-sim --trace TRACE.csv --hosts-file HOSTS.csv  (with --hosts-out)
  memagg-sim --trace TRACE.csv --hosts N

Formats installed (entry points memagg.sim.importers):
%s"""

EPILOG = """\
Grid: step k covers [start + k x step, start + (k+1) x step) of the
source's clock and is written as time k x step. A VM's samples in a step
are merged (cpu: their mean, wss_mb: their largest); booked_mb and vcpus
are its largest. Up to --max-gap seconds without samples are filled with
the step before; a longer gap ends the VM and starts VM#2. cpu above vcpus
and wss_mb above booked_mb are clipped. doc/source/admin/sim.rst has each
format's mapping.

Exit status: 0 done, 1 nothing left to write, 2 bad input."""


def importers():
    """{FORMAT: importer} of the installed plug-ins."""
    found = {}
    for name in plugins.names(NAMESPACE):
        try:
            found[name] = plugins.load(NAMESPACE, name, 'FORMAT',
                                       'trace format')
        except exceptions.InvalidParameter as error:
            raise cli.UsageError(str(error))
    return found


def _seconds(text):
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is None or not math.isfinite(value) or value < 0:
        for layout in DATE_FORMATS:
            try:
                return calendar.timegm(time_module.strptime(text, layout))
            except ValueError:
                continue
        raise argparse.ArgumentTypeError(
            'must be seconds (>= 0) of the trace\'s clock or a UTC date '
            'YYYY-MM-DD[THH:MM[:SS]], got %r' % text)
    return value


def build_parser(found):
    """The parser of memagg-sim import for the importers ``found``; its
    ``format_options`` maps each format's option dests to the format."""
    listing = '\n'.join('  %-12s %s\n  %-12s SRC: %s' % (
        name, imp.summary, '', imp.source) for name, imp in found.items())
    parser = arguments.Parser(
        prog=PROG, description=DESCRIPTION % listing, epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('format', metavar='FORMAT', choices=list(found),
                        help='The trace\'s format: %s.' % ', '.join(found))
    parser.add_argument('src', metavar='SRC',
                        help='The trace: a directory (see each format).')
    out = parser.add_argument_group('output')
    out.add_argument('-o', '--output', metavar='TRACE.csv', required=True,
                     help='The trace CSV to write (replaced).')
    out.add_argument(
        '--hosts-out', metavar='HOSTS.csv',
        help='Also write a hosts CSV (host,cpus,memory_mb): the hosts the '
             'trace names, or, when it names none, as many as hold every '
             'VM\'s booked memory and vCPUs at the busiest step.')
    out.add_argument(
        '--host-cpus', type=arguments.POSITIVE, metavar='CORES',
        help='Cores of each host of --hosts-out (default: the format\'s '
             'machine, else %g).' % arguments.DEFAULT_HOSTS_CPUS)
    out.add_argument(
        '--host-memory-mb', type=arguments.POSITIVE, metavar='MIB',
        help='MiB of each host of --hosts-out (default: the format\'s '
             'machine, else %g).' % arguments.DEFAULT_HOST_MEMORY_MB)
    grid = parser.add_argument_group('grid and window')
    grid.add_argument(
        '--step', type=arguments.POSITIVE, metavar='SECONDS',
        help='Seconds of a step (default: the format\'s sampling interval, '
             '300 for all three).')
    grid.add_argument(
        '--max-gap', type=arguments.NON_NEGATIVE, metavar='SECONDS',
        default=DEFAULT_MAX_GAP_S,
        help='Longest run without samples filled inside a VM\'s life; a '
             'longer one splits the VM (default %(default)g).')
    grid.add_argument(
        '--start', type=_seconds, metavar='WHEN',
        help='Convert from here: seconds of the trace\'s clock (Unix time '
             'for bitbrains, from the trace\'s start for the others), or a '
             'UTC date YYYY-MM-DD[THH:MM[:SS]] (Unix clock). Written times '
             'count from it (default: the trace\'s first sample).')
    grid.add_argument('--days', type=arguments.POSITIVE, metavar='DAYS',
                      help='Convert this many days from --start (default: '
                           'to the end).')
    grid.add_argument('--max-vms', type=arguments.POSITIVE_INT,
                      metavar='N', help='Convert the first N VMs only.')
    work = parser.add_argument_group('memory')
    work.add_argument(
        '--chunk-mb', type=arguments.POSITIVE, metavar='MIB',
        default=DEFAULT_CHUNK_MB,
        help='Input per spill bucket for the formats read as one big file '
             '(alibaba2018, google2019): a bucket\'s rows are what is held '
             'in memory at once (default %(default)g).')
    work.add_argument('--tmpdir', metavar='DIR',
                      help='Directory for the spill buckets (default: the '
                           'system\'s temporary directory).')
    parser.format_options = {}
    for name, imp in found.items():
        group = parser.add_argument_group('%s options' % name)
        imp.add_arguments(group)
        for action in group._group_actions:
            parser.format_options[action.dest] = (name, action)
    arguments.add_noise_arguments(out)
    return parser


def _check(args, parser, importer):
    for dest, (name, action) in parser.format_options.items():
        if name != args.format and getattr(args, dest, None) is not None:
            raise cli.UsageError('argument %s: only for %s'
                                 % ('/'.join(action.option_strings), name))
    if (args.start is not None and not importer.unix_clock
            and args.start >= 1e9):
        raise cli.UsageError('argument --start: %s counts seconds from the '
                             'trace\'s start, not Unix time; got %g'
                             % (args.format, args.start))


def convert(args, importer, stderr, show_progress):
    """Convert for parsed ``args``; returns the Writer and Counts. The
    output is written as OUTPUT.part and renamed when done and not empty:
    a failed or empty conversion leaves no file."""
    step = args.step or importer.step_s
    start = args.start
    if start is None:
        start = importer.first_time(args.src, args)
    window = base.Window(start, args.days and args.days * 86400)
    counts = base.Counts()
    bars = {}

    def progress(done, total, label):
        if not show_progress:
            return
        if label not in bars:
            for bar in bars.values():
                bar.close()
            bars.clear()
            bars[label] = sim_progress.Progress(total, stderr, True,
                                                label=label)
        bars[label].update(done)

    partial = args.output + '.part'
    try:
        with tempfile.TemporaryDirectory(
                dir=args.tmpdir, prefix='memagg-sim-import-') as tmp, \
                open(partial, 'w', newline='') as stream:
            context = base.Context(window, counts, args.max_vms, tmp,
                                   int(args.chunk_mb * (1 << 20)), progress)
            writer = series.Writer(stream, step, window.origin,
                                   math.floor(args.max_gap / step), counts)
            for name, samples in importer.vms(args.src, args, context):
                writer.write(name, samples)
        if writer.rows:
            os.replace(partial, args.output)
    except OSError as exc:
        where = exc.filename or args.output
        raise cli.UsageError('%s: %s' % (
            args.output if where == partial else where,
            exc.strerror or exc))
    finally:
        for bar in bars.values():
            bar.close()
        if os.path.exists(partial):
            os.unlink(partial)
    return writer, counts


def report(writer, counts, args, step):
    """The lines printed at the end: rows dropped per reason, the other
    tallies, and what was written."""
    lines = ['dropped %d rows: %s' % (rows, reason)
             for reason, rows in sorted(counts.dropped.items())]
    lines += ['%s: %d' % (what, count)
              for what, count in sorted(counts.notes.items())]
    lines.append('wrote %s: %d rows, %d VMs, %d steps of %g s'
                 % (args.output, writer.rows, writer.vms, writer.steps,
                    step))
    return lines


def run(args, parser, found, stdout, stderr):
    """memagg-sim import for parsed ``args``."""
    importer = found[args.format]
    _check(args, parser, importer)
    writer, counts = convert(args, importer, stderr,
                             arguments.show_progress(args, stderr))
    lines = report(writer, counts, args, args.step or importer.step_s)
    if writer.rows and args.hosts_out:
        cpus, memory = importer.host_size(args) or (
            arguments.DEFAULT_HOSTS_CPUS, arguments.DEFAULT_HOST_MEMORY_MB)
        cpus, memory = args.host_cpus or cpus, args.host_memory_mb or memory
        try:
            with open(args.hosts_out, 'w', newline='') as stream:
                hosts = writer.write_hosts(stream, cpus, memory)
        except OSError as exc:
            raise cli.UsageError('argument --hosts-out: cannot write %s: %s'
                                 % (args.hosts_out, exc.strerror or exc))
        lines.append('wrote %s: %d hosts of %g cores and %g MiB'
                     % (args.hosts_out, hosts, cpus, memory))
    if not args.quiet:
        stdout.write('\n'.join(lines) + '\n')
    if not writer.rows:
        return cli.fail(PROG, 'nothing written: no row of %s was kept (see '
                        'the counts above)' % args.src, NOTHING_WRITTEN)
    return 0


def main(argv):
    """memagg-sim import on ``argv``; the exit status."""
    try:
        found = importers()
        parser = build_parser(found)
        return run(parser.parse_args(argv), parser, found, sys.stdout,
                   sys.stderr)
    except (cli.UsageError, sim_trace.TraceError) as error:
        return cli.fail(PROG, str(error))
