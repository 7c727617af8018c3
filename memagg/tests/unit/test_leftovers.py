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

"""memagg.tests.leftovers: its decisions over made-up snapshots, and one
round trip on this host with a real child process."""
import copy
import os
import subprocess
import sys
import uuid

from memagg.tests import leftovers

INIT_NS = {'net': 'net:[1]', 'mnt': 'mnt:[1]'}
REPO = '/work/main'


def proc(pid, cmdline, start=100, comm=None, ppid=50, state='S',
         ns=INIT_NS, kthread=False):
    return {'pid': pid, 'start': start, 'state': state, 'ppid': ppid,
            'comm': comm or os.path.basename(cmdline[0])[:15],
            'kthread': kthread, 'cmdline': cmdline, 'ns': dict(ns)}


def state(processes=(), listeners=(), **changes):
    snap = {'processes': list(processes), 'listeners': list(listeners),
            'swaps': ['/dev/vdb'], 'netns': [], 'tracefs': [],
            'zswap': {'enabled': 'N', 'compressor': 'lzo'},
            'damon': {'nr_kdamonds': '1', 'kdamonds': {'0': 'off'}},
            'init_ns': dict(INIT_NS)}
    snap.update(changes)
    return snap


SHELL = proc(50, ['bash'], start=10)
SWAPD = proc(4242, ['/work/main/.venv/bin/python3',
                    '/work/main/.venv/bin/memagg-swapd', '--config-file',
                    '/tmp/x/swapd.conf'], comm='memagg-swapd')


def report(before, now, **kwargs):
    return leftovers.report(before, now, repo=REPO, **kwargs)


def test_a_new_process_of_the_suite_is_a_leftover():
    lines = report(state([SHELL]), state([SHELL, SWAPD]))
    assert lines == ['leftover process 4242 memagg-swapd --config-file '
                     '/tmp/x/swapd.conf (started after the snapshot)']


def test_a_process_running_at_the_snapshot_is_not():
    assert report(state([SHELL, SWAPD]), state([SHELL, SWAPD])) == []


def test_a_reused_pid_is_a_new_process():
    old = proc(4242, ['sleep', '1'], start=5)
    assert len(report(state([old]), state([SWAPD]))) == 1


def test_kinds_the_suite_starts():
    def suite(cmdline, **kwargs):
        return leftovers.is_suite_process(proc(7, cmdline, **kwargs),
                                          INIT_NS, REPO)
    assert suite(['/usr/bin/qemu-system-x86_64', '-name', 'guest=g'])
    assert suite(['/usr/lib/erlang/erts-13/bin/beam.smp', '-W', 'w'])
    assert suite(['/work/main/.venv-keystone/bin/python', '-c', 'x', '1'])
    assert suite(['python', '-m', 'django', 'runserver', '--noreload'])
    assert suite(['/work/main/.venv/bin/python3', '-m',
                  'memagg.tests.functional.tamper_proxy', '9'])
    assert suite(['/work/main/.venv/bin/python3',
                  '/work/main/memagg/tests/unit/native/hotset.py', '64'])
    # Another tree's Python, a shell, a kernel thread, a zombie: not.
    assert not suite(['/opt/other/python3', '-m', 'memagg.tests.x'])
    assert not suite(['bash', '-c', 'memagg/tests'])
    assert not suite(['fio'], kthread=True)
    assert not suite(['fio'], state='Z')


def test_the_system_libvirtd_restarted_by_a_test_is_not_a_leftover():
    now = [proc(900, ['libvirtd']), proc(901, ['virtlogd', '-d'])]
    assert report(state(), state(now)) == []


def test_a_libvirtd_of_another_namespace_or_config_is():
    now = [proc(900, ['libvirtd', '--listen'],
                ns={'net': 'net:[2]', 'mnt': 'mnt:[1]'}),
           proc(901, ['virtlogd'], ns={'net': 'net:[1]', 'mnt': 'mnt:[9]'}),
           proc(902, ['libvirtd', '-f', '/tmp/b/libvirtd.conf'])]
    lines = report(state(), state(now))
    assert [line.split()[2] for line in lines] == ['900', '901', '902']


def test_the_extra_pattern_adds_a_kind():
    marked = proc(77, ['sleep', '600', 'marker-1234'])
    assert report(state(), state([marked])) == []
    assert report(state(), state([marked]), extra='marker-12') == [
        'leftover process 77 sleep 600 marker-1234 '
        '(started after the snapshot)']


def test_processes_are_named_by_program_module_or_title():
    assert leftovers.short_name(SWAPD) == 'memagg-swapd'
    api = proc(8, ['/v/bin/python3', '-m', 'memagg.cmd.api', '--x'])
    assert leftovers.short_name(api) == 'memagg.cmd.api'
    assert leftovers.describe_process(api) == (
        'python3 -m memagg.cmd.api --x')
    titled = proc(9, ['[pytest-xdist running] memagg/tests/unit/t.py::a'],
                  comm='python3')
    assert leftovers.short_name(titled) == 'python3'
    assert leftovers.describe_process(titled) == titled['cmdline'][0]


def test_a_new_listener_is_named_with_its_owner():
    old = {'proto': 'tcp', 'address': '127.0.0.1', 'port': 5672,
           'inode': 1, 'pid': 3, 'owner': 'beam.smp'}
    new = [{'proto': 'tcp', 'address': '127.0.0.1', 'port': 7450,
            'inode': 2, 'pid': 4242, 'owner': 'memagg-swapd'},
           {'proto': 'tcp6', 'address': '::', 'port': 8774, 'inode': 3},
           {'proto': 'unix', 'address': '/run/memagg/swapd.sock',
            'port': None, 'inode': 4, 'pid': 4242, 'owner': 'memagg-swapd'}]
    # The same port of a restarted server is not new.
    lines = report(state(listeners=[old]),
                   state(listeners=[dict(old, inode=9)] + new))
    assert lines == [
        'leftover listener 127.0.0.1:7450 tcp (pid 4242 memagg-swapd)',
        'leftover listener [::]:8774 tcp6 (owner unknown)',
        'leftover listener /run/memagg/swapd.sock unix '
        '(pid 4242 memagg-swapd)']


def test_proc_net_tables_are_parsed():
    tcp = ('  sl  local_address rem_address   st tx_queue rx_queue\n'
           '   0: 0100007F:1D1A 00000000:0000 0A 00000000:00000000 00:0 0'
           '     0        0 8902 1 0 100 0 0 10 0\n'
           '   1: 0100007F:1D1A 0100007F:C350 01 00000000:00000000 00:0 0'
           '     0        0 8903 1 0 100 0 0 10 0\n')
    assert leftovers.parse_inet(tcp, 'tcp') == [
        {'proto': 'tcp', 'address': '127.0.0.1', 'port': 7450,
         'inode': 8902}]
    udp6 = ('  sl  local_address remote_address st\n'
            '  0: 00000000000000000000000001000000:0044 '
            '00000000000000000000000000000000:0000 07 0:0 00:0 0 0 0 77 2\n')
    assert leftovers.parse_inet(udp6, 'udp6')[0]['address'] == '::1'
    unix = ('Num       RefCount Protocol Flags    Type St Inode Path\n'
            '0000: 00000002 00000000 00010000 0001 01  4194 /run/a b.sock\n'
            '0000: 00000003 00000000 00000000 0001 03 19375\n')
    assert leftovers.parse_unix(unix) == [
        {'proto': 'unix', 'address': '/run/a b.sock', 'port': None,
         'inode': 4194}]


def test_changed_host_settings_are_named_with_old_and_new_values():
    before = state()
    now = state(swaps=['/dev/vdb', '/var/tmp/x.swap'],
                zswap={'enabled': 'Y', 'compressor': 'lzo'},
                damon={'nr_kdamonds': '2',
                       'kdamonds': {'0': 'on', '1': 'off'}},
                tracefs=['memagg-trace'], netns=['memagg-hostb-1'])
    assert report(before, now) == [
        'leftover swap: /var/tmp/x.swap',
        'host setting changed: zswap enabled Y (was N)',
        'host setting changed: DAMON nr_kdamonds 2 (was 1)',
        'leftover kdamond 0 state on (was off)',
        'leftover tracefs instance memagg-trace',
        'leftover network namespace memagg-hostb-1']
    back = copy.deepcopy(before)
    back['swaps'] = []
    assert report(before, back) == [
        'host setting changed: swap /dev/vdb off (was on)']


def _leftovers_cli(*args, env=None):
    return subprocess.run(
        [sys.executable, '-m', 'memagg.tests.leftovers'] + list(args),
        capture_output=True, text=True, timeout=120,
        env=dict(os.environ, **(env or {})))


def test_a_real_child_is_reported_until_it_is_gone(tmp_path):
    snap = str(tmp_path / 'snapshot.json')
    assert _leftovers_cli('snapshot', snap).returncode == 0
    marker = 'memagg-leftovers-probe-%s' % uuid.uuid4().hex
    env = {leftovers.EXTRA_PATTERN_ENV: marker}
    child = subprocess.Popen(
        [sys.executable, '-c',
         'import socket, time\n'
         's = socket.socket()\n'
         's.bind(("127.0.0.1", 0))\n'
         's.listen()\n'
         'print(s.getsockname()[1], flush=True)\n'
         'time.sleep(600)\n', marker],
        stdout=subprocess.PIPE, text=True)
    try:
        # The child says its port once it listens.
        port = int(child.stdout.readline())
        # Other processes on this host may show up too: only ours matters.
        done = _leftovers_cli('check', snap, '--grace', '1', env=env)
        assert done.returncode == 1, done.stdout + done.stderr
        lines = done.stdout.splitlines()
        assert any(line.startswith('leftover process %d ' % child.pid)
                   and marker in line for line in lines), done.stdout
        assert ('leftover listener 127.0.0.1:%d tcp (pid %d %s)' % (
            port, child.pid, os.path.basename(sys.executable))) in lines, (
            done.stdout)
    finally:
        child.kill()
        child.wait(timeout=30)  # reaped: no zombie left to see
        child.stdout.close()
    done = _leftovers_cli('check', snap, '--grace', '1', env=env)
    assert ':%d tcp ' % port not in done.stdout, done.stdout
    assert marker not in done.stdout, done.stdout
