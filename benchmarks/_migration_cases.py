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

"""benchmarks/migration.py's cases: what each measured, the table that
compares them and the verdicts on its targets."""
import statistics

MIB = 1 << 20
#: memagg's middle case against peer-a: bytes and time at most this ratio.
BYTES_TARGET = 0.6
#: The slowest memagg case's time over the fastest's, at most.
TIME_SPREAD_TARGET = 1.5
PEER_A = 'peer-a'
PEER_B = 'peer-b'


class Case:
    """One guest moved from host B to host A; see the module."""

    def __init__(self, name, share, swap):
        self.name = name
        self.share = share          # wanted share of the guest's memory
        self.swap = swap            # None, 'memagg' or 'local'
        self.remote_kb = 0
        self.used_kb = 0
        self.stored_mb = None
        self.grant = None
        self.prepare_s = 0.0
        self.result = None
        self.disk_copied = 0
        self.steps = []             # (step, seconds) of the whole case
        self.times = []             # of each migration (there and back)
        self.rebuilds = []          # memagg: seconds of each move's rebuild

    @property
    def measured_share(self):
        total = self.remote_kb + self.used_kb
        return self.remote_kb / total if total else 0.0

    @property
    def disk_bytes(self):
        """The local disk's copy: libvirt's disk_processed, or, where its
        completed job leaves it out, what the copy allocated in the
        destination's file."""
        return self.result.job.get('disk_processed') or self.disk_copied

    @property
    def bytes(self):
        if self.result.job.get('disk_processed'):
            return self.result.data_processed  # memory and disk
        return self.result.data_processed + self.disk_copied

    @property
    def seconds(self):
        return statistics.median(self.times)


def ratio(x, y):
    """x / y; infinite for y = 0."""
    return x / y if y else float('inf')


def print_table(cases, middle):
    """The table: one row per case, ratios to peer-a and peer-b."""
    a, b = cases[PEER_A], cases[PEER_B]
    print('%-10s | %6s %9s %9s | %10s %7s | %-11s | %-11s' % (
        'case', 'share', 'remote', 'stored', 'bytes', 'time', 'vs peer-a',
        'vs peer-b'))
    print('%-10s | %6s %9s %9s | %10s %7s | %5s %5s | %5s %5s' % (
        '', '%', 'MiB', 'MiB', 'MiB', 's', 'bytes', 'time', 'bytes',
        'time'))
    for name, case in cases.items():
        stored = ('%9.1f' % case.stored_mb if case.stored_mb is not None
                  else '%9s' % '-')
        print('%-10s | %6.1f %9.1f %s | %10.1f %7.2f | %4.2fx %4.2fx | '
              '%4.2fx %4.2fx' % (
                  name, 100 * case.measured_share, case.remote_kb / 1024,
                  stored, case.bytes / MIB, case.seconds,
                  ratio(case.bytes, a.bytes),
                  ratio(case.seconds, a.seconds),
                  ratio(case.bytes, b.bytes),
                  ratio(case.seconds, b.seconds)))
    for name, case in cases.items():
        job = case.result.job
        print('%s: times %s s; first: migrate call %.2f s (libvirt job '
              '%.2f s, its setup %.2f s, downtime %d ms), prepare %.2f s, '
              'memory %.1f MiB processed, disk %.1f MiB, normal pages %.1f '
              'MiB' % (
                  name, ' '.join('%.2f' % t for t in case.times),
                  case.result.seconds, job.get('time_elapsed', 0) / 1000,
                  job.get('setup_time', 0) / 1000, job.get('downtime', 0),
                  case.prepare_s,
                  (case.result.memory_processed or 0) / MIB,
                  case.disk_bytes / MIB,
                  job.get('memory_normal_bytes', 0) / MIB)
              + ('; rebuilds after the moves (untimed) %s s' % ' '.join(
                  '%.2f' % t for t in case.rebuilds) if case.rebuilds
                 else ''))


def verdicts(cases, middle, low, high):
    """Lines 'target: ... met|missed'."""
    a, b, mid = cases[PEER_A], cases[PEER_B], cases[middle]
    out = []

    def line(what, value, ok):
        out.append('target: %s: %s %s' % (what, value,
                                          'met' if ok else 'missed'))
    line('%s bytes <= %.1fx peer-a' % (middle, BYTES_TARGET),
         '%.2fx' % ratio(mid.bytes, a.bytes),
         mid.bytes <= BYTES_TARGET * a.bytes)
    line('%s time <= %.1fx peer-a' % (middle, BYTES_TARGET),
         '%.2fx' % ratio(mid.seconds, a.seconds),
         mid.seconds <= BYTES_TARGET * a.seconds)
    line('%s bytes < peer-b' % middle, '%.2fx' % ratio(mid.bytes, b.bytes),
         mid.bytes < b.bytes)
    line('%s time < peer-b' % middle,
         '%.2fx' % ratio(mid.seconds, b.seconds), mid.seconds < b.seconds)
    if low != high:
        spread = ratio(cases[high].seconds, cases[low].seconds)
        line('time %s / %s <= %.1fx' % (high, low, TIME_SPREAD_TARGET),
             '%.2fx' % spread, spread <= TIME_SPREAD_TARGET)
    return out
