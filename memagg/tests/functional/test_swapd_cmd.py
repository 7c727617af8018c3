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

"""memagg-swapd's console script as an operator runs it: ``memagg-swapd
--config-file memagg.conf``, its options from [swapd] and [DEFAULT] debug,
talked to over its control socket; as an unprivileged user giving its
export sockets to QEMU's group; as memagg-aio runs it, with the config
memagg-aio writes; a value it cannot run with is one line naming the
option, exit 2."""
import grp
import os
import pathlib
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile

from oslo_config import cfg
from oslo_log import log as logging
import pytest

from memagg.cmd import aio
from memagg.compute import swapd as swapd_client
from memagg.conf import swapd as swapd_opts
from memagg.tests.functional import service_procs
from memagg.tests.functional import test_swapd_nbd
from memagg.tests.functional import two_hosts

pytestmark = [pytest.mark.functional]

SWAPD = os.path.join(service_procs.BIN_DIR, 'memagg-swapd')

# The test's own accounts, made once per host and left for later runs: a
# group standing for QEMU's (libvirt-qemu), a user in it standing for
# QEMU's, and memagg-swapd's user, in that group too.
QEMU_GROUP = 'memagg-test-qemu'
QEMU_USER = 'memagg-test-qemu'
SWAPD_USER = 'memagg-test-swapd'
OUTSIDER = 'nobody'


def _run(*args):
    return subprocess.run([SWAPD, *args], capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)


def test_runs_with_the_options_of_its_config_file():
    # unix socket paths are limited to 107 bytes: a short directory.
    root = tempfile.mkdtemp(prefix='msd', dir='/tmp')
    user = pwd.getpwuid(os.getuid()).pw_name
    daemon = two_hosts.Swapd('swapd', root, capacity_mb=64, socket_user=user)
    try:
        ping = daemon.start()
        assert ping['version'] == 1
        assert ping['transport'] == 'tcp'
        assert ping['endpoint'] == daemon.endpoint
        assert daemon.client().donor_stats()['capacity'] == 64 << 20
        assert os.path.isdir(os.path.join(daemon.state_dir, 'exports'))
        assert 'capacity 64 MiB' in daemon.log()
    finally:
        code = daemon.stop()
        log = daemon.log()
        shutil.rmtree(root, ignore_errors=True)
    assert code == 0, log


def test_auto_lends_over_tcp_without_an_rdma_nic_and_says_why():
    # This host has libfabric's tcp provider but no RDMA NIC: auto lends
    # over memagg-swapd's TCP transport and logs why, once.
    root = tempfile.mkdtemp(prefix='msd', dir='/tmp')
    daemon = two_hosts.Swapd('swapd', root, capacity_mb=16,
                             transport='auto')
    try:
        ping = daemon.start()
        assert (ping['transport'], ping['rdma'], ping['fabric']) == (
            'tcp', 'available', 'tcp;ofi_rxm'), ping
        why = ("transport tcp: libfabric offers tcp;ofi_rxm, not an RDMA "
               "NIC's provider (verbs, efa)")
        assert daemon.log().count(why) == 1, daemon.log()
    finally:
        code = daemon.stop()
        log = daemon.log()
        shutil.rmtree(root, ignore_errors=True)
    assert code == 0, log


def _ensure_accounts():
    """Make the test's group and users if absent (needs root)."""
    if os.geteuid() != 0:
        if os.environ.get('CI') == 'true':
            pytest.fail('the functional tests run as root in CI')
        pytest.skip('making the test users needs root')
    nologin = ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin']
    try:
        grp.getgrnam(QEMU_GROUP)
    except KeyError:
        subprocess.run(['groupadd', '--system', QEMU_GROUP], check=True)
    for user, args in ((QEMU_USER, ['--gid', QEMU_GROUP]),
                       (SWAPD_USER, ['--user-group', '--groups',
                                     QEMU_GROUP])):
        try:
            pwd.getpwnam(user)
        except KeyError:
            subprocess.run(['useradd', *nologin, *args, user], check=True)
    assert SWAPD_USER in grp.getgrnam(QEMU_GROUP).gr_mem


def _status(pid):
    with open('/proc/%d/status' % pid) as f:
        return dict(line.rstrip('\n').split(':\t', 1) for line in f)


# This host's Python may live under a directory only root may enter
# (/root/.pyenv): in a mount namespace of the command's own, that directory
# becomes an empty tmpfs anyone may enter, with the interpreter's tree bound
# back in; then setpriv drops to the user, in its groups, with no
# capabilities left.
_AS_USER = """set -e
if [ -n "$2" ]; then
    mount --bind "$3" "$1"
    mount -t tmpfs -o mode=0755 memagg-test "$2"
    mkdir -p "$3"
    mount --move "$1" "$3"
fi
user=$4
shift 4
exec setpriv --reuid="$user" --regid="$(id -g "$user")" --init-groups \
    --inh-caps=-all --bounding-set=-all -- "$@"
"""


def _as_user(user, stash):
    """The command prefix running a command as ``user`` (see _AS_USER);
    ``stash``: an empty directory it may use."""
    path = pathlib.Path(os.path.realpath(sys.executable))
    closed = child = ''
    for parent in reversed(path.parents):
        if closed:
            child = str(parent)
            break
        if not os.stat(parent).st_mode & 0o001:
            closed = str(parent)
    return ['unshare', '--mount', '--propagation', 'private', 'sh', '-c',
            _AS_USER, 'sh', stash, closed, child, user]


def _qemu_io_as(user, sock, grant, command):
    uri = 'nbd+unix:///memagg-swap-%s?socket=%s' % (grant, sock)
    return subprocess.run(
        ['setpriv', '--reuid=' + user, '--regid=%d' % pwd.getpwnam(
            user).pw_gid, '--init-groups', '--inh-caps=-all', '--',
         'qemu-io', '-f', 'raw', uri, '-c', command], capture_output=True,
        text=True, timeout=120, stdin=subprocess.DEVNULL, cwd='/')


def test_runs_unprivileged_with_its_export_sockets_in_qemus_group():
    test_swapd_nbd._require('qemu-io')
    _ensure_accounts()
    swapd_user = pwd.getpwnam(SWAPD_USER)
    qemu_gid = grp.getgrnam(QEMU_GROUP).gr_gid
    root = tempfile.mkdtemp(prefix='msd', dir='/tmp')
    os.chmod(root, 0o755)
    stash = os.path.join(root, 'stash')
    os.mkdir(stash)
    daemon = two_hosts.Swapd('swapd', root, capacity_mb=64,
                             socket_group=QEMU_GROUP, user=SWAPD_USER,
                             prefix=_as_user(SWAPD_USER, stash))
    try:
        daemon.start()
        status = _status(daemon.proc.pid)
        assert status['Uid'].split() == [str(swapd_user.pw_uid)] * 4
        assert int(status['CapEff'], 16) == 0
        assert int(status['CapPrm'], 16) == 0
        control = os.stat(daemon.control)
        assert (control.st_mode & 0o777, control.st_uid) == (
            0o600, swapd_user.pw_uid)

        grant, sock, _ = test_swapd_nbd.grant_and_export(daemon, daemon)
        export = os.stat(sock)
        assert (export.st_mode & 0o777, export.st_uid, export.st_gid) == (
            0o660, swapd_user.pw_uid, qemu_gid)
        written = _qemu_io_as(QEMU_USER, sock, grant, 'write -P 0x5a 0 64k')
        assert written.returncode == 0, written.stdout + written.stderr
        read = _qemu_io_as(QEMU_USER, sock, grant, 'read -P 0x5a 0 64k')
        assert read.returncode == 0, read.stdout + read.stderr
        assert 'failed' not in (read.stdout + read.stderr).lower()
        refused = _qemu_io_as(OUTSIDER, sock, grant, 'read 0 4k')
        assert refused.returncode != 0
        assert 'Permission denied' in refused.stdout + refused.stderr
    finally:
        code = daemon.stop()
        log = daemon.log()
        shutil.rmtree(root, ignore_errors=True)
    assert code == 0, log


def test_a_socket_group_it_is_not_in_is_one_line_and_exit_2():
    _ensure_accounts()
    # pytest's tmp_path is root's alone: a directory anyone may read.
    root = tempfile.mkdtemp(prefix='msd', dir='/tmp')
    try:
        os.chmod(root, 0o755)
        config = os.path.join(root, 'memagg.conf')
        with open(config, 'w') as f:
            f.write('[swapd]\nsocket_group = %s\n' % QEMU_GROUP)
        stash = os.path.join(root, 'stash')
        os.mkdir(stash)
        proc = subprocess.run(
            _as_user(OUTSIDER, stash) + [SWAPD, '--config-file', config],
            capture_output=True, text=True, timeout=60,
            stdin=subprocess.DEVNULL, cwd='/')
    finally:
        shutil.rmtree(root, ignore_errors=True)
    assert proc.returncode == 2
    assert proc.stderr == (
        "memagg-swapd: error: [swapd] socket_group: memagg-swapd's user is "
        "not in "
        "group '%s'; add it to the group or start memagg-swapd with that "
        "group\n" % QEMU_GROUP)


def test_memagg_aio_runs_it_with_the_directories_it_moved():
    conf = cfg.ConfigOpts()
    swapd_opts.register_opts(conf)
    logging.register_options(conf)
    conf([], default_config_files=[])
    root = tempfile.mkdtemp(prefix='msd', dir='/tmp')
    listen = 'tcp://127.0.0.1:%d' % service_procs.free_port()
    # An export_dir no user can make: memagg-aio moves all three
    # directories under its state dir, and memagg-swapd must use those.
    conf.set_override('control_socket', os.path.join(root, 'c.sock'),
                      group='swapd')
    conf.set_override('export_dir', '/proc/memagg-cannot/exports',
                      group='swapd')
    conf.set_override('listen', listen, group='swapd')
    conf.set_override('transport', 'tcp', group='swapd')
    proc = aio.ensure_swapd(conf, root)
    try:
        assert proc is not None, open(os.path.join(root, 'swapd.log')).read()
        control = os.path.join(root, 'swapd', 'control.sock')
        assert conf.swapd.control_socket == control
        assert swapd_client.SwapdClient(control).ping()['endpoint'] == listen
        assert os.path.isdir(os.path.join(root, 'swapd', 'exports'))
    finally:
        if proc is not None:
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(30)
        shutil.rmtree(root, ignore_errors=True)
    assert code == 0


def test_a_bad_value_is_one_line_naming_the_option_and_exit_2(tmp_path):
    config = tmp_path / 'memagg.conf'
    config.write_text('[swapd]\ncapacity_mb = many\n')
    proc = _run('--config-file', str(config))
    assert proc.returncode == 2
    assert proc.stderr.startswith(
        'memagg-swapd: error: [swapd] capacity_mb: '), proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_a_missing_fabric_provider_is_one_line_naming_the_option(tmp_path):
    # libfabric offers no such provider here: memagg-swapd stops at start.
    config = tmp_path / 'memagg.conf'
    config.write_text('[swapd]\nfabric_provider = nosuch\n'
                      'control_socket = %s\n' % (tmp_path / 'control.sock'))
    proc = _run('--config-file', str(config))
    assert proc.returncode == 2, proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith('memagg-swapd: error: --fabric-provider: '
                           "'nosuch' cannot be used here: "), line
    assert 'set [swapd] fabric_provider to a provider' in line, line
    assert not (tmp_path / 'control.sock').exists()


def test_a_missing_config_file_is_one_line_and_exit_2(tmp_path):
    proc = _run('--config-file', str(tmp_path / 'missing.conf'))
    assert proc.returncode == 2
    assert proc.stderr == ('memagg-swapd: error: Failed to find some config '
                           'files: %s\n' % (tmp_path / 'missing.conf'))


def test_help_says_what_it_reads():
    proc = _run('--help')
    assert proc.returncode == 0, proc.stderr
    assert '--config-file PATH' in proc.stdout
    assert '[swapd] control_socket, export_dir, state_dir' in proc.stdout
    assert '--capacity-mb' not in proc.stdout
