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

"""memagg-swapd: the remote-swap data path of a compute node.

Serves each local VM's remote-swap disk to QEMU over NBD, keeps its pages in
slabs on donor hosts, and lends this host's spare memory to other hosts.
Like memagg's other services it reads memagg.conf (``--config-file``,
``--config-dir``): the [swapd] options of :data:`FLAGS` and [DEFAULT]
debug. The daemon is C (memagg._swapd, built from native/swapd) and takes
flags; :func:`core_arguments` is the one place that turns the config into
them, for this console script and for the memagg-swapd that memagg-aio
starts (through :func:`write_config`).

Exit status: 0 stopped by SIGTERM/SIGINT, 1 failed, 2 bad option (one line
on stderr naming it).
"""
import grp
import os
import pwd
import sys

from oslo_config import cfg

from memagg import _swapd
from memagg.common import cli
from memagg.conf import CONF

PROG = 'memagg-swapd'

#: The [swapd] options memagg-swapd runs with, each with the C core's flag.
FLAGS = (
    ('control_socket', '--control'),
    ('export_dir', '--export-dir'),
    ('state_dir', '--state-dir'),
    ('listen', '--listen'),
    ('advertise', '--advertise'),
    ('capacity_mb', '--capacity-mb'),
    ('transport', '--transport'),
    ('fabric_provider', '--fabric-provider'),
    ('socket_user', '--socket-user'),
    ('socket_group', '--socket-group'),
    ('max_connections', '--max-connections'),
    ('max_connections_per_peer', '--max-connections-per-peer'),
    ('idle_timeout', '--idle-timeout'),
    ('read_timeout', '--read-timeout'),
)

# oslo.log's [DEFAULT] debug, read from memagg.conf without oslo.log's other
# options: the C core logs to stderr itself, so they would do nothing here.
DEBUG = cfg.BoolOpt('debug', default=False,
                    help='Log at debug level instead of info.')

DESCRIPTION = """\
memagg-swapd serves this host's VMs' remote-swap disks over NBD (a unix
socket per export in [swapd] export_dir), keeps their pages on donor hosts,
and lends up to [swapd] capacity_mb of this host's memory on [swapd] listen.
memagg-compute drives it over [swapd] control_socket. It stops cleanly on
SIGTERM or SIGINT."""

EPILOG = """\
It reads memagg.conf: [swapd] %s; and [DEFAULT] debug. Its log goes to
stderr, at debug level when debug is true, else info.
oslo-config-generator --config-file etc/memagg/memagg-config-generator.conf
writes a sample memagg.conf with each option's help.""" % (
    ', '.join(name for name, _ in FLAGS))


class InvalidOption(ValueError):
    """An option value memagg-swapd cannot run with; the message names the
    option and what it must be."""


def _read(conf, group, name):
    try:
        return (conf[group] if group else conf)[name]
    except cfg.ConfigSourceValueError as error:
        # oslo.config's message wraps the type's own reason (its context)
        # in where the value came from; the option's name says enough.
        raise InvalidOption('[%s] %s: %s' % (
            group or 'DEFAULT', name, error.__context__ or error)) from None


def _value(conf, name):
    value = _read(conf, 'swapd', name)
    if name == 'socket_user' and value is not None:
        try:
            pwd.getpwnam(value)
        except KeyError:
            raise InvalidOption('[swapd] socket_user: no user %r on this '
                                'host; give QEMU\'s user (e.g. libvirt-qemu)'
                                % value) from None
    if name == 'socket_group' and value is not None:
        try:
            gid = grp.getgrnam(value).gr_gid
        except KeyError:
            raise InvalidOption('[swapd] socket_group: no group %r on this '
                                'host; give a group QEMU\'s user is in (e.g. '
                                'libvirt-qemu)' % value) from None
        # Without root (CAP_CHOWN) a socket goes only to a group one is in.
        if os.geteuid() != 0 and gid not in (os.getegid(), *os.getgroups()):
            raise InvalidOption('[swapd] socket_group: memagg-swapd\'s user '
                                'is not in group %r; add it to the group or '
                                'start memagg-swapd with that group' % value)
    return value


def options(conf):
    """{name: value} of the [swapd] options in :data:`FLAGS` (None: unset).

    Raises InvalidOption for the first value memagg-swapd cannot run with.
    """
    values = {name: _value(conf, name) for name, _ in FLAGS}
    # oslo.config bounds one option at a time; this pair goes together.
    if values['max_connections_per_peer'] > values['max_connections']:
        raise InvalidOption('[swapd] max_connections_per_peer: must be at '
                            'most max_connections (%d), not %d'
                            % (values['max_connections'],
                               values['max_connections_per_peer']))
    return values


def core_arguments(conf):
    """The C core's command line (without the program name) for ``conf``'s
    [swapd] options and [DEFAULT] debug; raises InvalidOption."""
    values = options(conf)
    args = []
    for name, flag in FLAGS:
        if values[name] is not None:
            args += [flag, str(values[name])]
    debug = _read(conf, None, 'debug')
    return args + ['--log-level', 'debug' if debug else 'info']


def write_config(path, swapd_options, debug=False):
    """Write at ``path`` a memagg.conf for memagg-swapd: [DEFAULT] debug and
    the [swapd] ``swapd_options`` (name: value; None values left out)."""
    lines = ['[DEFAULT]', 'debug = %s' % bool(debug), '', '[swapd]']
    for name, value in swapd_options.items():
        if value is not None:
            # '$' starts an oslo.config substitution; '$$' is a plain one.
            lines.append('%s = %s' % (name, str(value).replace('$', '$$')))
    with open(path, 'w') as f:
        f.write('\n'.join(lines) + '\n')


def _moved_flag(args):
    """The one-line answer to a flag the console script took before it read
    memagg.conf, or None."""
    moved = dict((flag, '[swapd] %s' % name) for name, flag in FLAGS)
    moved['--log-level'] = '[DEFAULT] debug'
    for arg in args:
        flag = arg.split('=', 1)[0]
        if flag in moved:
            return ('%s is now %s in memagg.conf (memagg-swapd '
                    '--config-file FILE)' % (flag, moved[flag]))
    return None


def main(argv=None):
    """Run memagg-swapd with the options of memagg.conf until SIGTERM or
    SIGINT; return its exit status."""
    args = (sys.argv if argv is None else argv)[1:]
    moved = _moved_flag(args)
    if moved:
        return cli.fail(PROG, moved)
    CONF.register_opt(DEBUG)
    try:
        CONF(args, project='memagg', prog=PROG, description=DESCRIPTION,
             epilog=EPILOG)
        core = core_arguments(CONF)
    except (cfg.Error, InvalidOption) as error:
        return cli.fail(PROG, str(error))
    return _swapd.run([PROG] + core)


if __name__ == '__main__':
    sys.exit(main())
