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

"""memagg-sim's input: the trace (what each VM used at each time step) and
the hosts it runs on, read from CSV files or built by
memagg.sim.synthetic.

Trace CSV: a header line naming the columns (any order), then one row per
VM per time step (rows in any order)::

    time       seconds from the start of the trace (number >= 0); the
               times must lie on one grid whose step is the smallest gap
               between two of them
    vm         the VM's name (any text)
    booked_mb  its flavor RAM in MiB (> 0), the same on every row of the VM
    vcpus      its vCPUs (integer >= 1), the same on every row of the VM
    cpu        cores it used over the step (0 .. vcpus)
    wss_mb     its working set over the step in MiB (0 .. booked_mb)
    host       optional: the host it runs on at its first row; later rows'
               values are not read (the simulator places VMs from then on);
               empty or no column: the placement plug-in places it

A VM runs from its first row to its last and needs a row at every step in
between. Hosts CSV: ``host`` (name), ``cpus`` (cores, > 0) and
``memory_mb`` (memory VMs may use, i.e. RAM less the host's reserve, > 0).

Every error names the file, the line and the field, and says what is
expected.
"""
import contextlib
import csv
import dataclasses
import operator

import numpy as np

TRACE_COLUMNS = ('time', 'vm', 'booked_mb', 'vcpus', 'cpu', 'wss_mb')
OPTIONAL_COLUMNS = ('host',)
HOSTS_COLUMNS = ('host', 'cpus', 'memory_mb')

# Times within this fraction of a step of a grid point are on it (times
# written with a few decimals).
_GRID_TOLERANCE = 1e-6


class TraceError(ValueError):
    """A trace or hosts file is wrong: says where (file, line, field) and
    what is expected."""

    def __init__(self, path, line, field, reason):
        self.path, self.line, self.field = path, line, field
        where = str(path) if line is None else '%s:%d' % (path, line)
        what = '' if field is None else 'field %s: ' % field
        super().__init__('%s: %s%s' % (where, what, reason))


@dataclasses.dataclass
class Hosts:
    """The simulated hosts: names, cores and memory VMs may use (MiB)."""

    names: list
    cpus: np.ndarray
    memory_mb: np.ndarray

    def __len__(self):
        return len(self.names)


@dataclasses.dataclass
class Trace:
    """VM use over time on a grid of ``step_s`` seconds.

    Per VM (arrays of length V): ``vm_ids``, ``booked_mb``, ``vcpus``,
    ``first`` and ``last`` (steps, inclusive, it runs) and
    ``initial_host`` (an index into ``host_names``, -1: to be placed).
    Per step and VM (T x V): ``cpu`` (cores) and ``wss_mb``, 0 outside the
    VM's life. ``host_names``: hosts the trace names, in order of first
    appearance.
    """

    step_s: float
    start_s: float
    vm_ids: list
    booked_mb: np.ndarray
    vcpus: np.ndarray
    first: np.ndarray
    last: np.ndarray
    initial_host: np.ndarray
    cpu: np.ndarray
    wss_mb: np.ndarray
    host_names: list = dataclasses.field(default_factory=list)
    host_lines: dict = dataclasses.field(default_factory=dict)
    path: str = None

    @property
    def steps(self):
        return self.cpu.shape[0]

    @property
    def vms(self):
        return len(self.vm_ids)


def _number(path, line, field, text, low=None, high=None, low_open=False,
            high_name=None, integer=False):
    """``text`` as a float within [low, high] (low excluded if
    ``low_open``), or TraceError saying what is expected (``high_name``:
    how to name ``high``, a format of it)."""
    try:
        value = float(text)
    except ValueError:
        value = None
    if (value is not None and value == value
            and value not in (float('inf'), float('-inf'))
            and not (integer and value != int(value))
            and value >= low and not (low_open and value == low)
            and (high is None or value <= high)):
        return value
    if integer:
        expected = 'an integer >= %d' % low
    elif high is not None:
        expected = 'a number between %g and %s' % (
            low, (high_name or '%g') % high)
    elif low_open:
        expected = 'a number > %g' % low
    else:
        expected = 'a number >= %g' % low
    raise TraceError(path, line, field,
                     'must be %s, got %r' % (expected, text))


def _header(path, reader, required, optional):
    """Column name -> index from the header line."""
    header = next(reader, None)
    allowed = required + optional
    if header is None:
        raise TraceError(path, 1, None, 'empty file; the first line must '
                         'name the columns %s' % ', '.join(allowed))
    columns = [name.strip() for name in header]
    for name in columns:
        if name not in allowed:
            raise TraceError(path, 1, name or '(empty)',
                             'unknown column; the columns are %s'
                             % ', '.join(allowed))
        if columns.count(name) > 1:
            raise TraceError(path, 1, name, 'named twice in the header')
    for name in required:
        if name not in columns:
            raise TraceError(path, 1, name, 'missing column; the header '
                             'must name %s' % ', '.join(required))
    return {name: columns.index(name) for name in columns}


def _rows(path, reader, width):
    """(line, row) of each non-blank row, checked to have ``width``
    fields."""
    for row in reader:
        if not row or (len(row) == 1 and not row[0].strip()):
            continue
        if len(row) != width:
            raise TraceError(path, reader.line_num, None,
                             '%d fields where the header names %d'
                             % (len(row), width))
        yield reader.line_num, row


#: The longest line a trace or hosts file may have, in bytes (a row of a
#: trace is about a hundred).
MAX_LINE_BYTES = 65536


def checked_lines(path, stream):
    """The lines of a binary ``stream`` as text: each checked to be UTF-8
    and at most MAX_LINE_BYTES long before it is decoded, so that a file
    that is not a trace fails on its line, not on a parser's limit."""
    number = 0
    while True:
        raw = stream.readline(MAX_LINE_BYTES + 1)
        if not raw:
            return
        number += 1
        if len(raw) > MAX_LINE_BYTES:
            raise TraceError(path, number, None, 'line longer than %d '
                             'bytes; a trace has one short row per line'
                             % MAX_LINE_BYTES)
        try:
            yield raw.decode('utf-8')
        except UnicodeDecodeError as exc:
            raise TraceError(path, number, None, 'not UTF-8 (byte 0x%02x '
                             'at column %d); save the file as UTF-8'
                             % (raw[exc.start], exc.start + 1))


@contextlib.contextmanager
def _open(path):
    """A csv.reader over the lines of ``path`` (see checked_lines)."""
    try:
        stream = open(path, 'rb')
    except OSError as exc:
        raise TraceError(path, None, None,
                         'cannot read: %s' % (exc.strerror or exc))
    with stream:
        yield csv.reader(checked_lines(path, stream))


def read_hosts(path):
    """Hosts from a hosts CSV (columns host, cpus, memory_mb)."""
    names, cpus, memory = [], [], []
    seen = {}
    with _open(path) as reader:
        index = _header(path, reader, HOSTS_COLUMNS, ())
        for line, row in _rows(path, reader, len(index)):
            name = row[index['host']].strip()
            if not name:
                raise TraceError(path, line, 'host', 'must name the host, '
                                 'got an empty value')
            if name in seen:
                raise TraceError(path, line, 'host', 'host %r is already on '
                                 'line %d' % (name, seen[name]))
            seen[name] = line
            names.append(name)
            cpus.append(_number(path, line, 'cpus', row[index['cpus']],
                                low=0, low_open=True))
            memory.append(_number(path, line, 'memory_mb',
                                  row[index['memory_mb']], low=0,
                                  low_open=True))
    if not names:
        raise TraceError(path, None, None, 'no hosts; add one row per host '
                         'after the header')
    return Hosts(names, np.array(cpus), np.array(memory))


def make_hosts(count, cpus, memory_mb, named=()):
    """``count`` identical hosts: those ``named`` first, then
    ``host-0000``... up to ``count``; ValueError when ``named`` holds more
    than ``count``."""
    named = list(named)
    if count is None:
        count = len(named)
    if count < len(named):
        raise ValueError('the trace names %d hosts, more than the %d asked '
                         'for' % (len(named), count))
    taken = set(named)
    names = list(named)
    i = 0
    while len(names) < count:
        name = 'host-%04d' % i
        i += 1
        if name not in taken:
            names.append(name)
    return Hosts(names, np.full(count, float(cpus)),
                 np.full(count, float(memory_mb)))


class _Vm:
    __slots__ = ('name', 'index', 'line', 'booked', 'vcpus', 'first_time',
                 'host', 'host_line')

    def __init__(self, name, index, line, booked, vcpus, time, host):
        self.name, self.index, self.line = name, index, line
        self.booked, self.vcpus = booked, vcpus
        self.first_time, self.host, self.host_line = time, host, line


def read_trace(path):
    """A Trace from a trace CSV (see the module's docstring); raises
    TraceError."""
    vms = {}
    host_index = {}
    lines, times, vm_of, cpu, wss = [], [], [], [], []
    inf = float('inf')
    with _open(path) as reader:
        index = _header(path, reader, TRACE_COLUMNS, OPTIONAL_COLUMNS)
        fields = operator.itemgetter(*[index[name]
                                       for name in TRACE_COLUMNS])
        host_col = index.get('host')
        for line, row in _rows(path, reader, len(index)):
            texts = fields(row)
            name = texts[1].strip()
            vm = vms.get(name)
            # Every value at once; _checked_row, only when one is off, finds
            # the first and says what is wrong with it.
            try:
                time, booked, vcpus, used, working = (
                    float(texts[0]), float(texts[2]), float(texts[3]),
                    float(texts[4]), float(texts[5]))
                good = (0 <= time < inf and 0 < booked < inf
                        and 1 <= vcpus < inf and vcpus.is_integer()
                        and 0 <= used <= vcpus and 0 <= working <= booked
                        and name and (vm is None or (
                            booked == vm.booked and vcpus == vm.vcpus)))
            except ValueError:
                good = False
            if not good:
                _checked_row(path, line, texts, vm)
            host = row[host_col].strip() if host_col is not None else ''
            if vm is None:
                vm = vms[name] = _Vm(name, len(vms), line, booked, vcpus, time,
                                     host)
            elif time < vm.first_time:
                vm.first_time, vm.host, vm.host_line = time, host, line
            cpu.append(used)
            wss.append(working)
            lines.append(line)
            times.append(time)
            vm_of.append(vm.index)
    if not lines:
        raise TraceError(path, None, None, 'no rows; add one row per VM per '
                         'time step after the header')
    ordered = list(vms.values())
    host_lines = {}
    for vm in sorted(ordered, key=lambda vm: vm.first_time):
        if vm.host and vm.host not in host_index:
            host_index[vm.host] = len(host_index)
            host_lines[vm.host] = vm.host_line
    lines = np.array(lines)
    times = np.array(times)
    vm_of = np.array(vm_of)
    steps, start, step = _grid(path, lines, times)
    _check_rows(path, lines, times, vm_of, steps, ordered)
    n_steps = int(steps.max()) + 1
    n_vms = len(ordered)
    cpu_grid = np.zeros((n_steps, n_vms))
    wss_grid = np.zeros((n_steps, n_vms))
    cpu_grid[steps, vm_of] = cpu
    wss_grid[steps, vm_of] = wss
    first = np.full(n_vms, n_steps)
    last = np.full(n_vms, -1)
    np.minimum.at(first, vm_of, steps)
    np.maximum.at(last, vm_of, steps)
    return Trace(
        step_s=step, start_s=start,
        vm_ids=[vm.name for vm in ordered],
        booked_mb=np.array([vm.booked for vm in ordered]),
        vcpus=np.array([vm.vcpus for vm in ordered], dtype=int),
        first=first, last=last,
        initial_host=np.array([host_index[vm.host] if vm.host else -1
                               for vm in ordered], dtype=int),
        cpu=cpu_grid, wss_mb=wss_grid, host_names=list(host_index),
        host_lines=host_lines, path=str(path))


def _checked_row(path, line, texts, vm):
    """Raise the TraceError of the first wrong value of a row (its texts
    in TRACE_COLUMNS order; ``vm``, the _Vm of its name when an earlier
    row named it), checked in the columns' order."""
    t_text, name, booked_text, vcpus_text, cpu_text, wss_text = texts
    _number(path, line, 'time', t_text, low=0)
    if not name.strip():
        raise TraceError(path, line, 'vm', 'must name the VM, got an '
                         'empty value')
    booked = _number(path, line, 'booked_mb', booked_text, low=0,
                     low_open=True)
    vcpus = _number(path, line, 'vcpus', vcpus_text, low=1, integer=True)
    if vm is not None:
        for field, mine, first in (('booked_mb', booked, vm.booked),
                                   ('vcpus', vcpus, vm.vcpus)):
            if mine != first:
                raise TraceError(
                    path, line, field, 'vm %s has %g here but %g on line '
                    '%d; it must be the same on every row'
                    % (vm.name, mine, first, vm.line))
    _number(path, line, 'cpu', cpu_text, low=0, high=vcpus,
            high_name='vcpus (%d)')
    _number(path, line, 'wss_mb', wss_text, low=0, high=booked,
            high_name='booked_mb (%g)')
    raise AssertionError('%s:%d: no value is wrong' % (path, line))


def _grid(path, lines, times):
    """Each row's step index, the start time and the step (s)."""
    distinct = np.unique(times)
    if len(distinct) < 2:
        raise TraceError(path, int(lines[0]), 'time', 'the trace needs at '
                         'least two distinct times to know its step, got '
                         'only %g' % distinct[0])
    start = float(distinct[0])
    step = float(np.diff(distinct).min())
    position = (times - start) / step
    steps = np.rint(position).astype(int)
    off = np.abs(position - steps) > _GRID_TOLERANCE
    if off.any():
        row = int(np.argmax(np.where(off, -lines, -np.inf)))
        raise TraceError(path, int(lines[row]), 'time',
                         '%g is not on the trace\'s grid of %g s steps from '
                         '%g; every time must be start + a whole number of '
                         'steps' % (times[row], step, start))
    return steps, start, step


def _check_rows(path, lines, times, vm_of, steps, vms):
    """One row per VM and step, and no step missing inside a VM's life."""
    order = np.lexsort((lines, steps, vm_of))
    same = ((vm_of[order][1:] == vm_of[order][:-1])
            & (steps[order][1:] == steps[order][:-1]))
    if same.any():
        dups = np.flatnonzero(same)
        second = dups[np.argmin(lines[order][dups + 1])]
        row, earlier = order[second + 1], order[second]
        raise TraceError(path, int(lines[row]), 'time',
                         'a second row for vm %s at time %g (the first is '
                         'line %d); give one row per VM per step'
                         % (vms[vm_of[row]].name, times[row],
                            lines[earlier]))
    gap = ((vm_of[order][1:] == vm_of[order][:-1])
           & (steps[order][1:] - steps[order][:-1] > 1))
    if gap.any():
        gaps = np.flatnonzero(gap)
        first_gap = gaps[np.argmin(lines[order][gaps + 1])]
        before, after = order[first_gap], order[first_gap + 1]
        missing = times[before] + (times[after] - times[before]) / (
            steps[after] - steps[before])
        raise TraceError(path, int(lines[after]), 'time',
                         'vm %s has no row at time %g (before this one); a '
                         'VM needs a row at every step from its first to '
                         'its last' % (vms[vm_of[after]].name, missing))


def initial_hosts(trace, hosts, hosts_path=None):
    """Each VM's initial host as an index into ``hosts`` (-1: none); a host
    the trace names that ``hosts`` (read from ``hosts_path``) lacks raises
    TraceError at the trace line naming it."""
    index = {name: i for i, name in enumerate(hosts.names)}
    for name in trace.host_names:
        if name not in index:
            known = ', '.join(hosts.names[:5]) + (
                ', ...' if len(hosts) > 5 else '')
            raise TraceError(trace.path, trace.host_lines.get(name), 'host',
                             'unknown host %r; %s names %s' % (
                                 name, hosts_path or 'the hosts', known))
    mapping = np.array([index[name] for name in trace.host_names] + [-1])
    return mapping[trace.initial_host]


def write_trace(trace, path):
    """Write ``trace`` as a trace CSV, each VM's initial host (if any) on
    its first row."""
    names = trace.host_names
    with open(path, 'w', newline='') as stream:
        out = csv.writer(stream)
        out.writerow(TRACE_COLUMNS + OPTIONAL_COLUMNS)
        for step in range(trace.steps):
            time = trace.start_s + step * trace.step_s
            alive = np.flatnonzero((trace.first <= step)
                                   & (trace.last >= step))
            for v in alive:
                host = trace.initial_host[v]
                # repr: the shortest text that reads back as the same
                # float, so a written trace replays exactly.
                out.writerow([
                    repr(time), trace.vm_ids[v],
                    repr(float(trace.booked_mb[v])), int(trace.vcpus[v]),
                    repr(float(trace.cpu[step, v])),
                    repr(float(trace.wss_mb[step, v])),
                    names[host] if host >= 0 and step == trace.first[v]
                    else ''])
