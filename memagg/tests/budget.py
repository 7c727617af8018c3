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

"""The suite's time budget, printed at the end of tools/run-tests.sh.

``python -m memagg.tests.budget DIR`` reads the lanes' records (DIR/*.jsonl,
written by memagg.tests.lanes) and their wall times (DIR/*.wall: start,
stop and exit status, written by run-tests.sh), and prints each lane's and
tier's wall time, the slowest tests and one closing line with the counts of
both lanes together. Printed, never asserted: a change that makes the
suite slower shows in its own run.
"""
import argparse
import collections
import glob
import json
import os
import sys

SLOWEST = 25
REASON_LINES = 12


def load(directory):
    """(records, walls): every phase record, and {lane: (start, stop, rc)}."""
    records = []
    for path in sorted(glob.glob(os.path.join(directory, '*.jsonl'))):
        with open(path) as f:
            records += [json.loads(line) for line in f if line.strip()]
    walls = {}
    for path in sorted(glob.glob(os.path.join(directory, '*.wall'))):
        with open(path) as f:
            start, stop, rc = f.read().split()
        lane = os.path.basename(path)[:-len('.wall')]
        walls[lane] = (float(start), float(stop), int(rc))
    return records, walls


def cpu_busy(directory):
    """(busy share, cores) of the machine's CPUs between DIR/cpu.before and
    DIR/cpu.after (/proc/stat's first line), or None without both: how
    much of the machine the run left idle, which says whether moving a test
    between lanes can shorten it or only less work can."""
    counters = []
    for name in ('cpu.before', 'cpu.after'):
        try:
            with open(os.path.join(directory, name)) as f:
                counters.append([int(v) for v in f.read().split()[1:]])
        except (OSError, ValueError):
            return None
    delta = [b - a for a, b in zip(*counters)]
    # user nice system idle iowait irq softirq steal (guest is in user).
    idle = delta[3] + delta[4]
    total = sum(delta[:8])
    return (1 - idle / total if total else 0.0), os.cpu_count()


def tests(records):
    """{nodeid: {'lane', 'outcome', 'start', 'stop', 'seconds'}}: a test is
    failed when any phase failed, skipped when a phase skipped and none
    failed, passed otherwise; its time is its phases' together."""
    found = {}
    for rec in records:
        test = found.setdefault(rec['nodeid'], {
            'lane': rec['lane'], 'outcome': 'passed', 'start': rec['start'],
            'stop': rec['stop'], 'seconds': 0.0})
        test['start'] = min(test['start'], rec['start'])
        test['stop'] = max(test['stop'], rec['stop'])
        test['seconds'] += rec['stop'] - rec['start']
        if rec['outcome'] == 'failed':
            test['outcome'] = 'failed'
        elif rec['outcome'] == 'skipped' and test['outcome'] == 'passed':
            test['outcome'] = 'skipped'
    return found


def reasons(records, nodeid, most=REASON_LINES):
    """At most ``most`` of the lines pytest marked as the error ("E   ...")
    of a failed test's phases, the first (the exception's message) and the
    last ones: what CI's tail, which may be all a reader of a failed run
    gets, needs to name the cause."""
    found = []
    for rec in records:
        if rec['nodeid'] == nodeid and rec['outcome'] == 'failed':
            found += [line for line in rec.get('message', '').splitlines()
                      if line.startswith('E ')]
    if len(found) <= most:
        return found
    head = most // 3
    return found[:head] + ['...'] + found[-(most - head - 1):]


def tier(nodeid):
    """A test's tier: the folder under memagg/tests it lives in."""
    parts = nodeid.split('::', 1)[0].split('/')
    if parts[:2] == ['memagg', 'tests'] and len(parts) > 3:
        return parts[2]
    return 'other'


def report(records, walls, slowest=SLOWEST, busy=None):
    """The budget's lines; the last is the closing count. ``busy``: what
    cpu_busy() found, if anything."""
    found = tests(records)
    lines = ['budget (printed, never asserted):']
    for lane, (start, stop, rc) in sorted(walls.items()):
        lines.append('  lane %-9s %7.0f s wall, exit %d'
                     % (lane, stop - start, rc))
    if busy is not None:
        lines.append('  cpu            %3.0f %% busy of %d cores while the '
                     'lanes ran' % (100 * busy[0], busy[1]))
    spans = collections.defaultdict(list)
    for nodeid, test in found.items():
        spans[tier(nodeid)].append(test)
    for name, members in sorted(spans.items()):
        wall = (max(t['stop'] for t in members)
                - min(t['start'] for t in members))
        busy = sum(t['seconds'] for t in members)
        lines.append('  tier %-9s %7.0f s wall, %7.0f s in its %d tests'
                     % (name, wall, busy, len(members)))
    lines.append('  %d slowest tests (setup, call and teardown):' % slowest)
    ranked = sorted(found.items(), key=lambda item: -item[1]['seconds'])
    for nodeid, test in ranked[:slowest]:
        lines.append('  %7.1f s  %-8s %s'
                     % (test['seconds'], test['lane'], nodeid))
    failed = sorted(n for n, t in found.items() if t['outcome'] == 'failed')
    for nodeid in failed:
        lines.append('FAILED %s' % nodeid)
        lines += ['  %s' % line for line in reasons(records, nodeid)]
    counts = collections.Counter(t['outcome'] for t in found.values())
    lines.append('total: %d passed, %d failed, %d skipped'
                 % (counts['passed'], counts['failed'], counts['skipped']))
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m memagg.tests.budget',
                                     description=__doc__.split('\n\n')[0])
    parser.add_argument('directory')
    args = parser.parse_args(argv)
    records, walls = load(args.directory)
    lines = report(records, walls, busy=cpu_busy(args.directory))
    print('\n'.join(lines))
    return 0


if __name__ == '__main__':
    sys.exit(main())
