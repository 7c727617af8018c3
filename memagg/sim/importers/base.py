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

"""The interface of memagg-sim import's plug-ins, and what they use to read
their files.

An importer reads a public trace and yields its VMs one at a time, each as
its samples (time in the source's clock, cores used, memory used, booked
memory, vCPUs and host); memagg.sim.importers.series puts them on the step
grid and writes the trace CSV. Bad input raises TraceError naming the file,
the line and the column; rows the mapping leaves out are counted per
reason in Context.counts.
"""
import collections
import contextlib
import gzip
import math
import os

from memagg.sim import trace as sim_trace

TraceError = sim_trace.TraceError

#: One sample of a VM: ``time`` in seconds of the source's clock, ``cpu``
#: cores used, ``wss_mb`` memory used (MiB), ``booked_mb`` and ``vcpus``
#: its size at that time, ``host`` the host it ran on ('' unknown).
Sample = collections.namedtuple(
    'Sample', 'time cpu wss_mb booked_mb vcpus host')


class Counts:
    """What the conversion left out or changed: input rows dropped per
    reason, and other tallies (cells clipped, steps filled, ...)."""

    def __init__(self):
        self.dropped = collections.Counter()
        self.notes = collections.Counter()

    def drop(self, reason, rows=1):
        """Count ``rows`` input rows left out for ``reason``."""
        self.dropped[reason] += rows

    def note(self, what, count=1):
        """Count ``count`` of ``what`` (not a dropped row)."""
        self.notes[what] += count


class Window:
    """The part of the source's clock to convert: [start, start + length)
    seconds; ``start`` None: from 0 (the grid's origin), ``length`` None:
    to the end."""

    def __init__(self, start=None, length=None):
        self.origin = 0.0 if start is None else float(start)
        self.end = None if length is None else self.origin + length

    def contains(self, time):
        return time >= self.origin and (self.end is None or time < self.end)


class Context:
    """What a conversion's importer is given besides its source: the
    window, the tallies, the --max-vms cap, a temporary directory (for
    spill files), the input bytes a spill bucket should hold, and a
    progress callback ``progress(done, total, label)`` (label: what is
    counted, the same for one pass over the input)."""

    def __init__(self, window, counts, max_vms=None, tmpdir=None,
                 chunk_bytes=16 << 20, progress=None):
        self.window = window
        self.counts = counts
        self.max_vms = max_vms
        self.tmpdir = tmpdir
        self.chunk_bytes = chunk_bytes
        self.progress = progress or (lambda done, total, label: None)
        self._admitted = set()

    def admit(self, vm):
        """Whether VM ``vm`` is converted: true for the first --max-vms
        VMs asked about (every one without the cap), and again for those
        later. Only the cap's VMs are remembered."""
        if self.max_vms is None or vm in self._admitted:
            return True
        if len(self._admitted) >= self.max_vms:
            return False
        self._admitted.add(vm)
        return True

    def admitted(self, vm):
        """Whether VM ``vm`` was admitted (every one without the cap)."""
        return self.max_vms is None or vm in self._admitted

    def full(self):
        """Whether --max-vms VMs have been admitted."""
        return (self.max_vms is not None
                and len(self._admitted) >= self.max_vms)


class Importer:
    """A public trace format: reads its files and yields VMs.

    Subclasses set the class attributes and implement :meth:`vms`; the
    plug-in's entry-point name (namespace ``memagg.sim.importers``) is the
    FORMAT of ``memagg-sim import FORMAT``.
    """

    #: One line for ``memagg-sim import --help``.
    summary = ''
    #: What SRC is, for --help.
    source = ''
    #: Default --step (s): the format's sampling interval.
    step_s = 300.0
    #: Whether the source's times are Unix seconds (--start may be a date).
    unix_clock = False

    def add_arguments(self, group):
        """Add this format's own options to argparse ``group``; each has a
        default of None so that giving one for another format is caught."""

    def host_size(self, args):
        """(cores, MiB) of a host --hosts-out writes, from the options in
        ``args`` (None: the --host-cpus/--host-memory-mb defaults)."""
        return None

    def first_time(self, src, args):
        """The earliest time of the trace at ``src`` on its clock: where
        the grid starts when --start is not given. None: at 0 (a clock
        that counts from the trace's start)."""
        return None

    def vms(self, src, args, context):
        """Yield ``(name, samples)`` for each VM of the trace at ``src``:
        its samples (Sample, any order) inside ``context.window``, for VMs
        ``context.admit`` accepts. Raises TraceError for bad input."""
        raise NotImplementedError


def _numbered(path, stream):
    number = 0
    lines = sim_trace.checked_lines(path, stream)
    while True:
        try:
            text = next(lines)
        except StopIteration:
            return
        except (OSError, EOFError) as exc:
            # A damaged or cut .gz file fails while it is read.
            raise TraceError(path, number + 1, None, 'cannot read: %s'
                             % exc)
        number += 1
        yield number, text


@contextlib.contextmanager
def open_lines(path):
    """``(lines, position)`` for file ``path`` (gunzipped when its name
    ends in .gz): ``lines`` yields (line number, text) checked as
    memagg.sim.trace.checked_lines does, ``position()`` the bytes of the
    file read so far."""
    try:
        raw = open(path, 'rb')
    except OSError as exc:
        raise TraceError(path, None, None,
                         'cannot read: %s' % (exc.strerror or exc))
    with raw:
        stream = (gzip.GzipFile(fileobj=raw) if str(path).endswith('.gz')
                  else raw)
        yield _numbered(path, stream), raw.tell


def number(path, line, column, text, low=0.0, high=None):
    """``text`` as a finite float in [low, high], or TraceError naming the
    file, line and column."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        value = None
    if value is None or not math.isfinite(value):
        raise TraceError(path, line, column,
                         'must be a number, got %r' % (text,))
    if value < low or (high is not None and value > high):
        raise TraceError(path, line, column, 'must be %s, got %r' % (
            'a number >= %g' % low if high is None
            else 'a number from %g to %g' % (low, high), text))
    return value


def file_size(paths):
    """Total size of ``paths`` in bytes (for progress and spill buckets)."""
    return sum(os.path.getsize(path) for path in paths)


def input_lines(paths, context):
    """(path, line number, text) of every line of ``paths`` in turn, with
    ``context.progress`` told the MiB read."""
    total = file_size(paths) >> 20
    before = 0
    for path in paths:
        with open_lines(path) as (lines, position):
            for line, text in lines:
                yield path, line, text
                if not line % 8192:
                    context.progress((before + position()) >> 20, total,
                                     'MiB read')
        before += os.path.getsize(path)
    context.progress(total, total, 'MiB read')


def find_inputs(src, prefix, required=True):
    """The files of directory ``src`` whose names start with ``prefix``
    (each ``PREFIX*.csv``, ``.json`` or ``.gz``), sorted; TraceError when
    ``required`` and there is none."""
    try:
        names = sorted(os.listdir(src))
    except OSError as exc:
        raise TraceError(src, None, None, 'cannot read: %s; SRC is the '
                         'directory holding the trace\'s files'
                         % (exc.strerror or exc))
    found = [os.path.join(src, name) for name in names
             if name.startswith(prefix)
             and name.endswith(('.csv', '.json', '.gz'))]
    if required and not found:
        raise TraceError(src, None, None, 'no %s* file (.csv, .json or '
                         '.gz) in this directory' % prefix)
    return found
