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

"""The GWA-T-12 Bitbrains traces (fastStorage and Rnd) of the Grid
Workloads Archive: one file per VM, ``N.csv``, directly in SRC
(fastStorage) or in month sub-directories (Rnd: ``2013-7/``, ``2013-8/``,
``2013-9/``), a header line then one row per 300 s sample, fields
separated by ``;`` and a tab.

Mapping, per row: time = ``Timestamp [ms]``, read as Unix seconds (the
published files hold seconds despite the label: about 1.37e9 for 2013); a
value of 1e11 or more is read as milliseconds. vcpus = ``CPU cores``; cpu
= ``CPU usage [MHZ]`` over the MHz of one core (``CPU capacity provisioned
[MHZ]`` / ``CPU cores``); booked_mb = ``Memory capacity provisioned [KB]``
/ 1024; wss_mb = ``Memory usage [KB]`` / 1024. No host.

A VM is the file name without ``.csv``: the Rnd trace's 500 VMs are
recorded month by month, so ``2013-7/12.csv``, ``2013-8/12.csv`` and
``2013-9/12.csv`` are the months of VM ``12`` and are joined into one
series (--separate-months makes each file its own VM, ``2013-7/12``).

Memory: one VM's rows at a time.
"""
import os
import re

from memagg.sim.importers import base

COLUMNS = ('Timestamp [ms]', 'CPU cores', 'CPU capacity provisioned [MHZ]',
           'CPU usage [MHZ]', 'CPU usage [%]',
           'Memory capacity provisioned [KB]', 'Memory usage [KB]',
           'Disk read throughput [KB/s]', 'Disk write throughput [KB/s]',
           'Network received throughput [KB/s]',
           'Network transmitted throughput [KB/s]')
TIME, CORES, CAPACITY, USAGE, _, MEMORY, MEMORY_USED = range(7)
#: Timestamps from here up are milliseconds (1e11 s is in the year 5138).
MILLISECONDS_FROM = 1e11


def _natural(name):
    return [int(part) if part.isdigit() else part
            for part in re.split(r'(\d+)', name)]


def _seconds(time):
    """A file's timestamp in seconds (Unix seconds, whatever the header's
    "[ms]" says; milliseconds where the value is that large)."""
    return time / 1000.0 if time >= MILLISECONDS_FROM else time


class Bitbrains(base.Importer):
    """GWA-T-12 Bitbrains (fastStorage, Rnd)."""

    summary = 'GWA-T-12 Bitbrains traces (fastStorage, Rnd)'
    source = 'directory of per-VM N.csv files, or of month directories'
    step_s = 300.0
    unix_clock = True

    def add_arguments(self, group):
        group.add_argument(
            '--separate-months', action='store_true', default=None,
            help='Each file is its own VM, named DIR/N (default: files of '
                 'one name in several month directories are one VM).')

    def files(self, src, separate):
        """{VM name: [its files]} of SRC, in natural order of names."""
        if os.path.isfile(src):
            name = os.path.basename(src)
            return {name[:-4] if name.endswith('.csv') else name: [src]}
        try:
            entries = sorted(os.listdir(src))
        except OSError as exc:
            raise base.TraceError(src, None, None, 'cannot read: %s'
                                  % (exc.strerror or exc))
        found = {}
        for entry in entries:
            path = os.path.join(src, entry)
            if os.path.isdir(path):
                try:
                    names = sorted(os.listdir(path), key=_natural)
                except OSError as exc:
                    raise base.TraceError(path, None, None, 'cannot read: %s'
                                          % (exc.strerror or exc))
                for name in names:
                    if name.endswith('.csv'):
                        vm = name[:-4]
                        found.setdefault(
                            '%s/%s' % (entry, vm) if separate else vm,
                            []).append(os.path.join(path, name))
            elif entry.endswith('.csv'):
                found.setdefault(entry[:-4], []).append(path)
        if not found:
            raise base.TraceError(src, None, None, 'no N.csv files, here or '
                                  'in its sub-directories; give the '
                                  'directory of a GWA-T-12 trace')
        return {vm: found[vm] for vm in sorted(found, key=_natural)}

    def first_time(self, src, args):
        """The earliest first sample of the VMs' files (each file is in
        time order, so only its first row is read)."""
        first = None
        for paths in self.files(src, bool(args.separate_months)).values():
            for path in paths:
                with base.open_lines(path) as (lines, _):
                    header = next(lines, None)
                    if header is not None:
                        self._header(path, header[1])
                    row = next(lines, None)
                    if row is None:
                        continue
                    time = _seconds(base.number(
                        path, row[0], COLUMNS[TIME],
                        row[1].split(';')[0].strip()))
                    first = time if first is None else min(first, time)
        return first

    def vms(self, src, args, context):
        groups = self.files(src, bool(args.separate_months))
        for done, (vm, paths) in enumerate(groups.items()):
            if context.full():
                context.counts.note('VMs not read (--max-vms)',
                                    len(groups) - done)
                return
            samples = []
            for path in paths:
                samples.extend(self._samples(path, context))
            if samples and context.admit(vm):
                yield vm, samples
            context.progress(done + 1, len(groups), 'VMs')

    def _samples(self, path, context):
        with base.open_lines(path) as (lines, _):
            header = next(lines, None)
            if header is None:
                raise base.TraceError(path, 1, None, 'empty file; a GWA-T-12 '
                                      'file starts with a header line')
            self._header(path, header[1])
            for line, text in lines:
                if not text.strip():
                    continue
                sample = self._row(path, line, text.split(';'),
                                   context.counts)
                if sample is None:
                    continue
                if not context.window.contains(sample.time):
                    context.counts.drop('outside --start/--days')
                    continue
                yield sample

    @staticmethod
    def _header(path, text):
        names = [name.strip() for name in text.split(';')]
        for i, expected in enumerate(COLUMNS):
            if i >= len(names) or names[i] != expected:
                raise base.TraceError(
                    path, 1, expected, 'not a GWA-T-12 Bitbrains file: its '
                    'header has %s here (columns are separated by ";")'
                    % (repr(names[i]) if i < len(names) else 'nothing'))
        if len(names) > len(COLUMNS):
            raise base.TraceError(
                path, 1, None, 'column %d: not a GWA-T-12 Bitbrains file: '
                'its header has more than %d columns'
                % (len(COLUMNS) + 1, len(COLUMNS)))

    @staticmethod
    def _row(path, line, fields, counts):
        if len(fields) < len(COLUMNS):
            raise base.TraceError(path, line, COLUMNS[len(fields)],
                                  'missing: the row has %d of the %d fields '
                                  'the header names; is the file cut short?'
                                  % (len(fields), len(COLUMNS)))
        if len(fields) > len(COLUMNS):
            raise base.TraceError(path, line, None, 'column %d: more than '
                                  'the %d fields the header names'
                                  % (len(COLUMNS) + 1, len(COLUMNS)))

        def value(i):
            return base.number(path, line, COLUMNS[i], fields[i].strip())

        time = _seconds(value(TIME))
        cores, capacity = value(CORES), value(CAPACITY)
        memory = value(MEMORY)
        if cores == 0 or capacity == 0:
            counts.drop('no CPU provisioned (CPU cores or capacity 0)')
            return None
        if memory == 0:
            counts.drop('no memory provisioned')
            return None
        return base.Sample(time, value(USAGE) / (capacity / cores),
                           value(MEMORY_USED) / 1024.0, memory / 1024.0,
                           cores, '')
