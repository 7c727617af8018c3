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

"""What a test run left behind on the host.

``python -m memagg.tests.leftovers snapshot FILE`` records the host's state
(processes, listeners, swap, zswap, DAMON, tracefs instances, network
namespaces) as JSON; ``... check FILE`` prints one line per leftover since
and exits 1, or prints ``leftovers: none`` and exits 0. report() and what it
calls decide over snapshot dicts; the readers of /proc and /sys are thin.
MEMAGG_LEFTOVERS_EXTRA_PATTERN, a regular expression searched in a command
line, adds to the kinds of process the suite starts (is_suite_process()).
"""
import argparse
import json
import os
import re
import socket
import struct
import sys
import time

from memagg.tests import damon as damon_files

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
EXTRA_PATTERN_ENV = 'MEMAGG_LEFTOVERS_EXTRA_PATTERN'
GRACE = 10.0
PF_KTHREAD = 0x00200000
# Program names (comm, argv[0], a Python script's name) of what the suite
# starts. Only processes new since the snapshot are judged, so the host's
# own RabbitMQ or MariaDB, running before, never match.
NAME_PREFIXES = ('memagg-', 'qemu-system', 'qemu-nbd', 'uwsgi', 'pyuwsgi',
                 'nbdkit', 'keystone', 'chromium', 'chromedriver')
NAMES = {'fio', 'beam.smp', 'rabbitmq-server', 'epmd', 'mariadbd', 'mysqld'}
LIBVIRT_NAMES = {'libvirtd', 'virtlogd'}
# Keystone: ``python -c`` of .venv-keystone; Horizon: Django's runserver.
CMDLINE_RE = re.compile(r'\.venv-keystone/|\bdjango\b.*\brunserver\b'
                        r'|manage\.py\s+runserver')
# A Python process of this tree is the suite's only when it runs its code.
PYTHON_MARKERS = ('memagg/tests', 'memagg.tests', 'memagg.cmd',
                  'tamper_proxy', 'hotset')
NAMESPACES = ('net', 'mnt')


def proc_key(proc):
    """A process's identity across pid reuse: pid and start time."""
    return '%d:%d' % (proc['pid'], proc['start'])


def _program(args):
    """argv without a Python interpreter in front of a script."""
    python = args and os.path.basename(args[0]).startswith('python')
    if python and len(args) > 1 and not args[1].startswith('-'):
        return args[1:]
    return args


def short_name(proc):
    """A process's name for a report: its program, or a Python module."""
    args = proc['cmdline']
    if not args or _is_title(args):
        return proc['comm']
    if len(args) > 2 and args[1] == '-m' and \
            os.path.basename(args[0]).startswith('python'):
        return args[2]
    return os.path.basename(_program(args)[0])


def _is_title(args):
    """Whether argv is a title the process wrote over it (setproctitle)."""
    return len(args) == 1 and ' ' in args[0]


def describe_process(proc, limit=240):
    """``name args...`` on one line, cut at ``limit`` characters."""
    args = _program(proc['cmdline']) or [proc['comm']]
    if not _is_title(args):
        args = [os.path.basename(args[0])] + args[1:]
    text = ' '.join(' '.join(args).split())
    return text if len(text) <= limit else text[:limit - 3] + '...'


def is_suite_process(proc, init_ns, repo=REPO, extra=None):
    """Whether ``proc`` is of a kind the suite starts. libvirtd and virtlogd
    count only in a network or mount namespace other than ``init_ns`` (host
    B) or with a config file of their own: a test that restarts the system
    daemon starts the same binary, plainly, in the init namespaces."""
    if proc['kthread'] or proc['state'] in ('Z', 'X'):
        return False
    args = proc['cmdline']
    line = ' '.join(args)
    names = {proc['comm']} | {os.path.basename(a) for a in
                              args[:1] + _program(args)[:1]}
    if extra and re.search(extra, line):
        return True
    if any(n.startswith(NAME_PREFIXES) or n in NAMES for n in names):
        return True
    if names & LIBVIRT_NAMES:
        own_config = any(a in ('-f', '--config') or a.startswith('--config=')
                         for a in args[1:])
        ns = proc.get('ns') or {}
        elsewhere = any(ns.get(k) and init_ns.get(k) and ns[k] != init_ns[k]
                        for k in NAMESPACES)
        return own_config or elsewhere
    return bool(CMDLINE_RE.search(line)) or (
        any(n.startswith('python') for n in names)
        and repo.rstrip('/') + '/' in line
        and any(m in line for m in PYTHON_MARKERS))


def leftover_processes(before, now, init_ns, repo=REPO, extra=None,
                       ignore=()):
    """Processes of ``now`` new since ``before`` that the suite starts;
    pids in ``ignore`` (the checker and its ancestors) excepted."""
    old = {proc_key(p) for p in before}
    return [p for p in now if proc_key(p) not in old
            and p['pid'] not in ignore
            and is_suite_process(p, init_ns, repo, extra)]


def describe_listener(sock):
    """``127.0.0.1:7450 tcp (pid 12 memagg-swapd)`` and the like."""
    if sock['proto'] == 'unix':
        where = sock['address'] or '(unnamed, inode %d)' % sock['inode']
    elif ':' in sock['address']:
        where = '[%s]:%d' % (sock['address'], sock['port'])
    else:
        where = '%s:%d' % (sock['address'], sock['port'])
    owner = ('pid %d %s' % (sock['pid'], sock['owner'])
             if sock.get('pid') else 'owner unknown')
    return '%s %s (%s)' % (where, sock['proto'], owner)


def setting_changes(before, now):
    """Lines for swap, zswap, DAMON, tracefs and netns changes."""
    lines = ['leftover swap: %s' % s for s in now['swaps']
             if s not in before['swaps']]
    lines += ['host setting changed: swap %s off (was on)' % s
              for s in before['swaps'] if s not in now['swaps']]
    lines += ['host setting changed: zswap %s %s (was %s)'
              % (name, value, before['zswap'][name])
              for name, value in sorted(now['zswap'].items())
              if before['zswap'].get(name, value) != value]
    damon, was_damon = now['damon'], before['damon']
    if damon['nr_kdamonds'] != was_damon['nr_kdamonds']:
        lines.append('host setting changed: DAMON nr_kdamonds %s (was %s)'
                     % (damon['nr_kdamonds'], was_damon['nr_kdamonds']))
    for index, state in sorted(damon['kdamonds'].items(),
                               key=lambda item: int(item[0])):
        was = was_damon['kdamonds'].get(index, 'absent')
        if state == was or (state == 'off' and was == 'absent'):
            continue  # an idle new kdamond is nr_kdamonds's line
        what = 'leftover' if state != 'off' else 'host setting changed:'
        lines.append('%s kdamond %s state %s (was %s)'
                     % (what, index, state, was))
    lines += ['leftover tracefs instance %s' % name for name
              in sorted(set(now['tracefs']) - set(before['tracefs']))]
    lines += ['leftover network namespace %s' % name for name
              in sorted(set(now['netns']) - set(before['netns']))]
    return lines


def report(before, now, extra=None, ignore=(), repo=REPO):
    """Every leftover of ``now`` against ``before``, one line each."""
    procs = leftover_processes(before['processes'], now['processes'],
                               now['init_ns'], repo, extra, ignore)
    lines = ['leftover process %d %s (started after the snapshot)'
             % (p['pid'], describe_process(p)) for p in procs]
    # A listener is new by what its clients see: a restarted server on its
    # old port or path is not.
    old = {(s['proto'], s['address'], s['port']) for s in before['listeners']}
    lines += ['leftover listener %s' % describe_listener(s)
              for s in now['listeners']
              if (s['proto'], s['address'], s['port']) not in old]
    return lines + setting_changes(before, now)


def parse_inet(text, proto):
    """Listening sockets of /proc/net/{tcp,tcp6,udp,udp6} ``text``."""
    found = []
    for line in text.splitlines()[1:]:
        f = line.split()
        if len(f) < 10:
            continue
        # TCP: LISTEN; UDP: bound and unconnected (state CLOSE, no peer).
        if f[3] == '0A' if proto.startswith('tcp') else (
                f[3] == '07' and f[2].endswith(':0000')):
            addr, port = f[1].split(':')
            # Each 32-bit word is printed as a host-order integer.
            raw = b''.join(struct.pack('=I', int(addr[i:i + 8], 16))
                           for i in range(0, len(addr), 8))
            family = socket.AF_INET6 if len(raw) == 16 else socket.AF_INET
            found.append({'proto': proto, 'port': int(port, 16),
                          'address': socket.inet_ntop(family, raw),
                          'inode': int(f[9])})
    return found


def parse_unix(text):
    """Listening sockets of /proc/net/unix ``text``."""
    found = []
    for line in text.splitlines()[1:]:
        f = line.split(None, 7)
        # __SO_ACCEPTCON in Flags, SS_UNCONNECTED in St: listen() was called.
        if len(f) >= 7 and int(f[3], 16) & 0x10000 and f[5] == '01':
            found.append({'proto': 'unix', 'port': None, 'inode': int(f[6]),
                          'address': f[7].strip() if len(f) > 7 else ''})
    return found


def _quiet(read, *args, default=None):
    """``read(*args)``, or ``default`` if its file is gone or unreadable:
    processes exit while being read; some of /proc is not even root's."""
    try:
        return read(*args)
    except OSError:
        return default


def _read(path, mode='r'):
    def read():
        with open(path, mode) as f:
            return f.read()
    return _quiet(read, default='' if mode == 'r' else b'')


def _listdir(path):
    return _quiet(os.listdir, path, default=[])


def _ns(pid, kind):
    return _quiet(os.readlink, '/proc/%s/ns/%s' % (pid, kind))


def read_processes():
    """Every process of /proc as a dict (see snapshot())."""
    procs = []
    for entry in sorted(_listdir('/proc'), key=lambda e: e.zfill(10)):
        stat = entry.isdigit() and _read('/proc/%s/stat' % entry)
        if not stat:
            continue
        # comm may hold spaces and parentheses: cut at the last ')'.
        fields = stat[stat.rfind(')') + 2:].split()
        if len(fields) < 20:
            continue  # not a stat line we know
        raw = _read('/proc/%s/cmdline' % entry, 'rb').rstrip(b'\0')
        procs.append({
            'pid': int(entry), 'start': int(fields[19]), 'state': fields[0],
            'ppid': int(fields[1]), 'comm': stat[stat.find('(') + 1:
                                                 stat.rfind(')')],
            'kthread': bool(int(fields[6]) & PF_KTHREAD),
            'cmdline': [a.decode(errors='replace')
                        for a in raw.split(b'\0')] if raw else [],
            'ns': {kind: _ns(entry, kind) for kind in NAMESPACES}})
    return procs


def read_listeners(procs):
    """Listening sockets of this network namespace, each with its owner
    (lowest pid holding it) when one is found in /proc/PID/fd."""
    owners = {}
    for proc in procs:
        fd_dir = '/proc/%d/fd' % proc['pid']
        for fd in _listdir(fd_dir):
            link = _quiet(os.readlink, os.path.join(fd_dir, fd)) or ''
            if link.startswith('socket:['):
                owners.setdefault(int(link[8:-1]), proc)
    socks = parse_unix(_read('/proc/net/unix'))
    for proto in ('tcp', 'tcp6', 'udp', 'udp6'):
        socks += parse_inet(_read('/proc/net/' + proto), proto)
    for sock in socks:
        owner = owners.get(sock['inode'])
        if owner:
            sock.update(pid=owner['pid'], owner=short_name(owner))
    return socks


def snapshot(procs=None):
    """The host's state now, as a JSON-able dict."""
    procs = read_processes() if procs is None else procs
    damon = '/sys/kernel/mm/damon/admin/kdamonds/'
    zswap = '/sys/module/zswap/parameters/'
    swaps = _read('/proc/swaps').splitlines()[1:]
    return {
        'processes': procs,
        'listeners': read_listeners(procs),
        'swaps': [line.split()[0] for line in swaps if line.strip()],
        'zswap': {name: _read(zswap + name).strip()
                  for name in _listdir(zswap)},
        'damon': {'nr_kdamonds': _read(damon + 'nr_kdamonds').strip(),
                  'kdamonds': {d: _quiet(damon_files.read_busy,
                                         damon + d + '/state',
                                         default='').strip()
                               for d in _listdir(damon) if d.isdigit()}},
        'tracefs': _listdir('/sys/kernel/tracing/instances'),
        'netns': _listdir('/run/netns'),
        'init_ns': init_namespaces()}


def init_namespaces():
    """The init namespaces: PID 1's, or ours where those are unreadable
    (in some containers even root may not read PID 1's)."""
    return {kind: _ns(1, kind) or _ns('self', kind) for kind in NAMESPACES}


def _ancestors(procs):
    """This process and its ancestors: the checker is no leftover."""
    parents, pid, found = {p['pid']: p['ppid'] for p in procs}, os.getpid(), []
    while pid > 0 and pid not in found:
        found.append(pid)
        pid = parents.get(pid, 0)
    return found


def check(before, grace=GRACE, extra=None):
    """Leftover lines of the host against snapshot ``before``. A process
    counts only if it still runs ``grace`` s on: a short-lived one the end
    of the run started (rabbitmqctl's epmd-starter, a daemon handling its
    SIGTERM) is gone by then; a leaked one is not."""
    deadline = time.monotonic() + grace
    while True:
        procs = read_processes()
        ignore = _ancestors(procs)
        found = leftover_processes(before['processes'], procs,
                                   init_namespaces(), extra=extra,
                                   ignore=ignore)
        if not found or time.monotonic() >= deadline:
            break
        time.sleep(0.2)  # the poll interval of that wait
    return report(before, snapshot(procs), extra, ignore)


def main(argv=None):
    """The command line: ``snapshot FILE`` or ``check FILE [--grace S]``."""
    parser = argparse.ArgumentParser(prog='python -m memagg.tests.leftovers',
                                     description=__doc__.split('\n\n')[0])
    parser.add_argument('action', choices=['snapshot', 'check'])
    parser.add_argument('file')
    parser.add_argument('--grace', type=float, default=GRACE,
                        help='seconds a new process may take to exit before '
                             'it counts')
    args = parser.parse_args(argv)
    if args.action == 'snapshot':
        with open(args.file, 'w') as f:
            json.dump(snapshot(), f)
        return 0
    with open(args.file) as f:
        before = json.load(f)
    lines = check(before, args.grace, os.environ.get(EXTRA_PATTERN_ENV))
    print('\n'.join(lines) if lines else 'leftovers: none')
    return 1 if lines else 0


if __name__ == '__main__':
    sys.exit(main())
