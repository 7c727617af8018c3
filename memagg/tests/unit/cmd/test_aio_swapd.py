"""memagg-aio starting memagg-swapd: its command line from [swapd], its
directories, a detached child with its own log and pid file, and what
happens when it does not come up.

The child here is a stand-in script answering PING on --control (the real
daemon is started by memagg/tests/functional/test_compute_remote_swapd.py),
so these tests check memagg-aio's side only.
"""
import os
import signal
import sys

import pytest

from memagg.cmd import aio
from memagg.compute import swapd

STAND_IN = r'''
import socket, sys
path = sys.argv[sys.argv.index('--control') + 1]
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


@pytest.fixture
def swapd_conf(conf, tmp_path):
    conf.config(control_socket=str(tmp_path / 'run' / 'control.sock'),
                export_dir=str(tmp_path / 'run' / 'exports'),
                state_dir=str(tmp_path / 'lib'), capacity_mb=2048,
                socket_user='libvirt-qemu', group='swapd')
    return conf


def test_command_line_follows_the_swapd_options(swapd_conf, tmp_path):
    swapd_conf.config(advertise='tcp://10.0.0.1:7450', group='swapd')
    assert aio.swapd_arguments(swapd_conf.conf) == [
        '--control', str(tmp_path / 'run' / 'control.sock'),
        '--export-dir', str(tmp_path / 'run' / 'exports'),
        '--state-dir', str(tmp_path / 'lib'),
        '--listen', 'tcp://0.0.0.0:7450', '--capacity-mb', '2048',
        '--transport', 'auto', '--advertise', 'tcp://10.0.0.1:7450',
        '--socket-user', 'libvirt-qemu']


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
        assert '--capacity-mb 2048' in argv_file.read_text()
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


def test_disabled_starts_nothing(swapd_conf, tmp_path):
    swapd_conf.config(enabled=False, group='swapd')
    assert aio.ensure_swapd(swapd_conf.conf, str(tmp_path),
                            command=('false',)) is None
    assert not (tmp_path / 'swapd.log').exists()
