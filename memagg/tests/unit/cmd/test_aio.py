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

"""memagg-aio (memagg/cmd/aio.py): its key for the grants' secrets, made
under its state directory on the first run, kept and checked after; and
memagg-swapd started by it: the config it writes for it from [swapd], its
directories, a child in its own session with its own log and pid file,
what happens when it does not come up, and its stop with memagg-aio.

The child here is a stand-in script answering PING on the control socket
of the config it is given (the real daemon is started by
memagg/tests/functional/test_compute_remote_swapd.py and
test_swapd_cmd.py), so these tests check memagg-aio's side only.
"""
import configparser
import os
import pwd
import signal
import subprocess
import sys

from oslo_config import cfg
from oslo_config import fixture as config_fixture
from oslo_log import log as logging
import pytest

from memagg.cmd import aio
from memagg.cmd import swapd as swapd_cmd
from memagg.compute import swapd
from memagg.conf import swapd as swapd_opts
from memagg.db import secret_box
from memagg.tests import polling

STAND_IN = r'''
import configparser, socket, sys
config_file = sys.argv[sys.argv.index('--config-file') + 1]
config = configparser.ConfigParser(interpolation=None)
config.read(config_file)
path = config['swapd']['control_socket']
with open(sys.argv[1], 'w') as f:
    f.write(' '.join(sys.argv[2:]))
server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
server.bind(path)
server.listen(4)
while True:
    conn, _ = server.accept()
    conn.recv(4096)
    conn.sendall(b'OK version=1 transport=tcp rdma=unavailable:none '
                 b'endpoint=tcp://127.0.0.1:7450\n')
    conn.close()
'''


USER = pwd.getpwuid(os.getuid()).pw_name


@pytest.fixture
def swapd_conf(tmp_path):
    """A config as memagg-aio has it: [swapd] and oslo.log's options."""
    conf = cfg.ConfigOpts()
    swapd_opts.register_opts(conf)
    logging.register_options(conf)
    conf([], default_config_files=[])
    fixture = config_fixture.Config(conf)
    fixture.setUp()
    fixture.config(control_socket=str(tmp_path / 'run' / 'control.sock'),
                   export_dir=str(tmp_path / 'run' / 'exports'),
                   state_dir=str(tmp_path / 'lib'), capacity_mb=2048,
                   socket_user=USER, group='swapd')
    yield fixture
    fixture.cleanUp()


def _read_config(path):
    config = configparser.ConfigParser(interpolation=None)
    config.read(path)
    return config


def test_directories_this_user_cannot_make_move_under_the_state_dir(
        swapd_conf, tmp_path):
    swapd_conf.config(export_dir='/proc/memagg-cannot/exports',
                      group='swapd')
    aio.place_swapd_dirs(swapd_conf.conf, str(tmp_path / 'state'))
    group = swapd_conf.conf.swapd
    base = tmp_path / 'state' / 'swapd'
    assert (group.control_socket, group.export_dir, group.state_dir) == (
        str(base / 'control.sock'), str(base / 'exports'),
        str(base / 'state'))


def _stop(proc):
    if proc is not None and proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(10)


def test_starts_a_detached_swapd_that_answers(swapd_conf, tmp_path):
    argv_file = tmp_path / 'argv'
    command = (sys.executable, '-c', STAND_IN, str(argv_file))
    state = tmp_path / 'state'
    state.mkdir()
    proc = aio.ensure_swapd(swapd_conf.conf, str(state), command=command)
    try:
        assert proc is not None and proc.poll() is None
        # Its own session: a Ctrl-C to memagg-aio's group does not reach it.
        assert os.getsid(proc.pid) == proc.pid != os.getsid(0)
        assert (state / 'swapd.pid').read_text() == '%d\n' % proc.pid
        assert (state / 'swapd.log').exists()
        config_file = str(state / 'swapd.conf')
        assert argv_file.read_text() == '--config-file ' + config_file
        config = _read_config(config_file)
        assert config['swapd']['capacity_mb'] == '2048'
        assert config['swapd']['socket_user'] == USER
        assert config['DEFAULT']['debug'] == 'False'
        client = swapd.SwapdClient(swapd_conf.conf.swapd.control_socket)
        assert client.ping()['version'] == 1
        # A second memagg-aio finds it answering and starts none.
        assert aio.ensure_swapd(swapd_conf.conf, str(state),
                                command=('false',)) is None
    finally:
        _stop(proc)


def test_a_swapd_that_exits_at_start_leaves_no_remote_memory(
        swapd_conf, tmp_path, caplog):
    proc = aio.ensure_swapd(swapd_conf.conf, str(tmp_path),
                            command=(sys.executable, '-c',
                                     'import sys; print("bad option"); '
                                     'sys.exit(2)'))
    assert proc is None
    assert 'exited at start (status 2)' in caplog.text
    assert 'bad option' in (tmp_path / 'swapd.log').read_text()


def test_the_child_config_holds_the_directories_aio_moved(
        swapd_conf, tmp_path):
    # /proc cannot hold a directory: place_swapd_dirs moves all three under
    # the state dir, and the child must run with those, not memagg.conf's.
    swapd_conf.config(export_dir='/proc/memagg-cannot/exports',
                      group='swapd')
    state = tmp_path / 'state'
    state.mkdir()
    proc = aio.ensure_swapd(swapd_conf.conf, str(state),
                            command=(sys.executable, '-c',
                                     'import sys; sys.exit(1)'))
    assert proc is None
    written = _read_config(state / 'swapd.conf')['swapd']
    assert written['export_dir'] == str(state / 'swapd' / 'exports')
    assert written['control_socket'] == str(state / 'swapd' /
                                            'control.sock')


def test_an_option_swapd_cannot_run_with_starts_nothing(
        swapd_conf, tmp_path):
    swapd_conf.config(socket_user='memagg-no-such-user', group='swapd')
    with pytest.raises(swapd_cmd.InvalidOption, match=r'^\[swapd\] '
                       'socket_user: no user'):
        aio.ensure_swapd(swapd_conf.conf, str(tmp_path), command=('false',))
    assert not (tmp_path / 'swapd.log').exists()


def test_disabled_starts_nothing(swapd_conf, tmp_path):
    swapd_conf.config(enabled=False, group='swapd')
    assert aio.ensure_swapd(swapd_conf.conf, str(tmp_path),
                            command=('false',)) is None
    assert not (tmp_path / 'swapd.log').exists()


def test_its_swapd_is_the_state_dirs_and_this_hosts_alone(tmp_path):
    """Two memagg-aio with their own state directories shared
    /run/memagg/swapd/control.sock (the second drove the first's swapd),
    and their swapd took donor connections from anywhere (0.0.0.0)."""
    conf = cfg.ConfigOpts()
    swapd_opts.register_opts(conf)
    conf([], default_config_files=[])
    aio.private_swapd_defaults(conf, str(tmp_path))
    base = tmp_path / 'swapd'
    group = conf.swapd
    assert (group.control_socket, group.export_dir, group.state_dir,
            group.listen) == (str(base / 'control.sock'),
                              str(base / 'exports'), str(base / 'state'),
                              'tcp://127.0.0.1:7450')
    # What a config file gives still wins.
    conf.set_override('listen', 'tcp://10.0.0.5:7450', group='swapd')
    assert conf.swapd.listen == 'tcp://10.0.0.5:7450'


@pytest.mark.parametrize('ignores_sigterm, status',
                         [(False, -15), (True, -9)])
def test_its_swapd_stops_with_it(ignores_sigterm, status, tmp_path):
    ready = tmp_path / 'ready'
    child = ('import pathlib, signal, sys, time\n'
             'if sys.argv[1] == "1":\n'
             '    signal.signal(signal.SIGTERM, signal.SIG_IGN)\n'
             'pathlib.Path(sys.argv[2]).touch()\n'
             'while True:\n'
             '    time.sleep(60)\n')
    proc = subprocess.Popen([sys.executable, '-c', child,
                             str(int(ignores_sigterm)), str(ready)])
    try:
        polling.wait_for(ready.exists, 30, message='the child set up')
        assert aio.stop_swapd(proc, timeout=1) == status
    finally:
        proc.kill()
        proc.wait()


def test_the_first_run_makes_a_0600_key_the_next_keeps_it(tmp_path):
    path = aio.state_key_file(str(tmp_path))
    key = secret_box.load_key(path)

    assert path == str(tmp_path / 'secret.key')
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert aio.state_key_file(str(tmp_path)) == path
    assert secret_box.load_key(path) == key


def test_a_state_dir_key_made_open_is_refused(tmp_path):
    path = aio.state_key_file(str(tmp_path))
    os.chmod(path, 0o644)

    with pytest.raises(secret_box.KeyFileError) as error:
        aio.state_key_file(str(tmp_path))
    assert str(error.value).startswith(
        "[database] secret_key_file (memagg-aio's) %s is open to group or "
        "others (mode 0644); run \"chmod 600 %s\"" % (path, path))
