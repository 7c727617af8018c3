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

"""memagg-swapd's console script: memagg.conf to the C core's command line
(core_arguments, the one builder of it), the config memagg-aio writes for
it (write_config), and the one-line errors for values it cannot run with.

The daemon itself starts from a config file in
memagg/tests/functional/test_swapd_cmd.py.
"""
import grp
import os
import pwd

from oslo_config import cfg
import pytest

from memagg.cmd import swapd as swapd_cmd
from memagg.conf import swapd as swapd_opts

USER = pwd.getpwuid(os.getuid()).pw_name
# A group this process is in: memagg-swapd may give its sockets to it.
GROUP = grp.getgrgid(os.getgid()).gr_name


def _conf(tmp_path, text):
    """A ConfigOpts as memagg-swapd's main has it, read from ``text``."""
    path = tmp_path / 'memagg.conf'
    path.write_text(text)
    conf = cfg.ConfigOpts()
    swapd_opts.register_opts(conf)
    conf.register_opt(swapd_cmd.DEBUG)
    conf(['--config-file', str(path)], default_config_files=[])
    return conf


def test_arguments_follow_every_swapd_option(tmp_path):
    conf = _conf(tmp_path, """
[DEFAULT]
debug = true

[swapd]
control_socket = /r/control.sock
export_dir = /r/exports
state_dir = /s
listen = tcp://10.0.0.2:7451
advertise = tcp://compute-1.example:7451
capacity_mb = 2048
transport = tcp
socket_user = %s
socket_group = %s
max_connections = 512
max_connections_per_peer = 8
idle_timeout = 60
read_timeout = 5
""" % (USER, GROUP))
    assert swapd_cmd.core_arguments(conf) == [
        '--control', '/r/control.sock', '--export-dir', '/r/exports',
        '--state-dir', '/s', '--listen', 'tcp://10.0.0.2:7451',
        '--advertise', 'tcp://compute-1.example:7451',
        '--capacity-mb', '2048', '--transport', 'tcp',
        '--socket-user', USER, '--socket-group', GROUP,
        '--max-connections', '512', '--max-connections-per-peer', '8',
        '--idle-timeout', '60', '--read-timeout', '5',
        '--log-level', 'debug']


def test_defaults_leave_advertise_and_socket_user_to_the_core(tmp_path):
    conf = _conf(tmp_path, '')
    # The management address, never every address unless written.
    assert conf.my_ip not in ('0.0.0.0', '::', '')
    assert swapd_cmd.core_arguments(conf) == [
        '--control', '/run/memagg/swapd/control.sock',
        '--export-dir', '/run/memagg/swapd/exports',
        '--state-dir', '/var/lib/memagg/swapd',
        '--listen', 'tcp://%s:7450' % conf.my_ip, '--capacity-mb', '0',
        '--transport', 'auto', '--max-connections', '256',
        '--max-connections-per-peer', '32', '--idle-timeout', '300',
        '--read-timeout', '10', '--log-level', 'info']


def test_listen_follows_my_ip(tmp_path):
    conf = _conf(tmp_path, '[DEFAULT]\nmy_ip = 10.1.2.3\n')
    assert conf.swapd.listen == 'tcp://10.1.2.3:7450'
    assert '--listen' in swapd_cmd.core_arguments(conf)


def test_a_written_config_reads_back_to_the_same_arguments(tmp_path):
    # '$' would start an oslo.config substitution if written as it is.
    values = {'control_socket': '/r/$dollar/control.sock',
              'export_dir': '/r/exports', 'state_dir': '/s',
              'listen': 'tcp://127.0.0.1:7452', 'advertise': None,
              'capacity_mb': 64, 'transport': 'rdma',
              'fabric_provider': 'tcp', 'socket_user': None,
              'socket_group': None, 'max_connections': 100,
              'max_connections_per_peer': 10, 'idle_timeout': 30,
              'read_timeout': 2}
    path = tmp_path / 'swapd.conf'
    swapd_cmd.write_config(str(path), values, debug=True)
    conf = cfg.ConfigOpts()
    swapd_opts.register_opts(conf)
    conf.register_opt(swapd_cmd.DEBUG)
    conf(['--config-file', str(path)], default_config_files=[])
    assert swapd_cmd.options(conf) == values
    assert swapd_cmd.core_arguments(conf)[-2:] == ['--log-level', 'debug']


@pytest.mark.parametrize('group, name, value, reason', [
    ('swapd', 'capacity_mb', 'many', "invalid literal for int() with base "
                                     "10: 'many'"),
    ('swapd', 'capacity_mb', '-1', 'greater than or equal to 0'),
    ('swapd', 'capacity_mb', str(1 << 41), 'less than or equal to'),
    ('swapd', 'transport', 'udp', "Valid values are [auto, tcp, rdma], but "
                                  "found 'udp'"),
    ('swapd', 'listen', 'tcp://0.0.0.0', 'must be tcp://HOST:PORT or '
                                         "rdma://HOST:PORT (port 1-65535), "
                                         "not 'tcp://0.0.0.0'"),
    ('swapd', 'listen', 'tcp://0.0.0.0:0', '(port 1-65535)'),
    ('swapd', 'listen', 'tcp://0.0.0.0:65536', '(port 1-65535)'),
    ('swapd', 'listen', 'udp://0.0.0.0:7450', 'must be tcp://HOST:PORT'),
    ('swapd', 'advertise', 'compute-1:7450', 'must be tcp://HOST:PORT'),
    ('swapd', 'advertise', 'tcp://[::1]:7450', 'must be tcp://HOST:PORT'),
    ('swapd', 'socket_user', 'memagg-no-such-user',
     "no user 'memagg-no-such-user' on this host; give QEMU's user "
     "(e.g. libvirt-qemu)"),
    ('swapd', 'socket_group', 'memagg-no-such-group',
     "no group 'memagg-no-such-group' on this host; give a group QEMU's "
     "user is in (e.g. libvirt-qemu)"),
    ('swapd', 'max_connections', '0', 'greater than or equal to 1'),
    ('swapd', 'max_connections', '4097', 'less than or equal to 4096'),
    ('swapd', 'max_connections_per_peer', '257',
     'must be at most max_connections (256), not 257'),
    ('swapd', 'idle_timeout', '0', 'greater than or equal to 1'),
    ('swapd', 'read_timeout', '3601', 'less than or equal to 3600'),
    ('DEFAULT', 'debug', 'maybe', "Unexpected boolean value 'maybe'"),
])
def test_a_bad_value_names_its_option_and_why(tmp_path, group, name, value,
                                              reason):
    conf = _conf(tmp_path, '[%s]\n%s = %s\n' % (group, name, value))
    with pytest.raises(swapd_cmd.InvalidOption) as caught:
        swapd_cmd.core_arguments(conf)
    message = str(caught.value)
    assert message.startswith('[%s] %s: ' % (group, name)), message
    assert reason in message
    assert '\n' not in message


def test_endpoints_the_core_takes_are_taken(tmp_path):
    conf = _conf(tmp_path, """
[swapd]
listen = rdma://host_1.example-net:65535
advertise = tcp://192.168.0.10:1
""")
    assert swapd_cmd.options(conf)['listen'] == \
        'rdma://host_1.example-net:65535'


@pytest.mark.parametrize('argv, flag, option', [
    (['--capacity-mb', '64'], '--capacity-mb', '[swapd] capacity_mb'),
    (['--config-file', 'x.conf', '--control=/r/c.sock'], '--control',
     '[swapd] control_socket'),
    (['--log-level', 'debug'], '--log-level', '[DEFAULT] debug'),
])
def test_a_flag_of_the_old_command_line_says_where_it_went(capsys, argv,
                                                           flag, option):
    assert swapd_cmd.main(['memagg-swapd'] + argv) == 2
    err = capsys.readouterr().err
    assert err == ('memagg-swapd: error: %s is now %s in memagg.conf '
                   '(memagg-swapd --config-file FILE)\n' % (flag, option))
