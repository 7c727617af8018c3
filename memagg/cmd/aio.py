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

"""memagg-aio: API, scheduler and compute in one process on this host.

For a first run and for development: SQLite under a state directory
(migrated to head at start; the key wrapping the grants' secrets in it,
secret.key, beside it), in-process messaging (``fake://``), the API
without authentication, and libvirt at qemu:///system when a libvirtd
answers (libvirt's test:///default driver otherwise). It prints the API URL
and an example request, then runs until Ctrl-C or SIGTERM. With --demo
(memagg.demo) it first checks that the host can run the demo cloud and
builds its guest image, then, once the services run, boots the demo's
guests and manages those alone; on exit it destroys them.

With [swapd] enabled and no memagg-swapd answering on [swapd]
control_socket, it starts one (the remote-swap data path) as a process with
its own session, config and log file (swapd.conf and swapd.log in the state
directory, its pid in swapd.pid): swapd.conf holds the [swapd] options and
[DEFAULT] debug memagg-aio runs with, its own overrides included. Unless
the config file says otherwise, that memagg-swapd is this state
directory's alone (its control socket, exports and state under
STATE_DIR/swapd, so a second memagg-aio with another state directory
cannot drive it) and takes donor connections on 127.0.0.1 only. It stops
when memagg-aio stops; ``--keep-swapd`` keeps it running, for guests that
still swap to its exports (stopping it fails their swap I/O), and the next
memagg-aio on the same state directory finds it answering and uses it.
"""
import os
import pathlib
import shutil
import subprocess
import sys
import threading
import time

import libvirt
from oslo_config import cfg
from oslo_log import log as logging

from memagg.api import app as api_app
from memagg.api import server as api_server
from memagg.cmd import swapd as swapd_cmd
from memagg.common import cli
from memagg.common import context
from memagg.common import guru
from memagg.common import rpc
from memagg.compute import manager as compute_manager
from memagg.compute import rpcapi as compute_rpcapi
from memagg.compute import swapd as swapd_client
from memagg.conf import CONF
from memagg.db import facade as db_facade
from memagg.db import migration
from memagg.db import secret_box
from memagg.demo import cloud as demo_cloud
from memagg.demo import horizon as demo_horizon
from memagg.demo import keystone as demo_keystone
from memagg.drivers.hypervisor import base as hypervisor
from memagg.drivers.hypervisor import libvirt_driver
from memagg import objects
from memagg.scheduler import manager as scheduler_manager
from memagg.scheduler import rpcapi as scheduler_rpcapi
from memagg import service

LOG = logging.getLogger(__name__)

SYSTEM_URI = 'qemu:///system'
TEST_URI = 'test:///default'

cli_opts = [
    cfg.StrOpt('state-dir',
               help='Directory of the SQLite database. Default: '
                    '$XDG_STATE_HOME/memagg, else ~/.local/state/memagg.'),
    cfg.HostAddressOpt('bind-host', default='127.0.0.1',
                       help='Address the API listens on.'),
    cfg.PortOpt('port', default=8799,
                help='Port the API listens on (0 picks a free one).'),
    cfg.BoolOpt('demo', default=False,
                help='Boot a demo cloud of tiny real guests (TCG) on this '
                     'host\'s libvirtd, each with a workload that shows one '
                     'of memagg\'s jobs, with a donor memagg-swapd, a '
                     'Keystone and a Horizon of its own, and stop them on '
                     'exit. Needs libvirtd at qemu:///system, about 2.3 GiB '
                     'of free memory and the Keystone and Horizon '
                     'tools/setup.sh installs; the guest image is built '
                     'once from Debian packages and cached.'),
    cfg.BoolOpt('keep-swapd', default=False,
                help='Leave the memagg-swapd memagg-aio started running '
                     'when memagg-aio stops: guests swapping to its '
                     'exports keep their swap disks.'),
]


#: How memagg-aio runs memagg-swapd: the console script's module, with
#: this interpreter (no PATH needed); ``--config-file`` follows.
SWAPD_COMMAND = (sys.executable, '-m', 'memagg.cmd.swapd')

#: Seconds memagg-swapd has to answer PING after its start.
SWAPD_START_TIMEOUT = 15

#: Seconds memagg-swapd has to exit on SIGTERM before it is killed.
SWAPD_STOP_TIMEOUT = 30

#: Where memagg-aio's memagg-swapd takes donor connections by default:
#: this host only, as nothing else of memagg-aio is on the network.
SWAPD_LISTEN = 'tcp://127.0.0.1:7450'

#: Where the demo's donor memagg-swapd lends its memory.
DONOR_LISTEN = 'tcp://127.0.0.1:7451'


def default_state_dir():
    """Per-user state directory (XDG base directory specification)."""
    base = os.environ.get('XDG_STATE_HOME') or os.path.join(
        os.path.expanduser('~'), '.local', 'state')
    return os.path.join(base, 'memagg')


def libvirt_uri():
    """qemu:///system when a libvirtd answers there, else test:///default."""
    if libvirt_driver.answers(SYSTEM_URI):
        LOG.info('libvirt answers at %s', SYSTEM_URI)
        return SYSTEM_URI
    return TEST_URI


def _usable_dir(path):
    try:
        os.makedirs(path, exist_ok=True)
    except OSError:
        return False
    return os.access(path, os.W_OK | os.X_OK)


def _state_dir_swapd(state_dir):
    """[swapd]'s socket and directories under ``state_dir``/swapd."""
    base = os.path.join(state_dir, 'swapd')
    return {'control_socket': os.path.join(base, 'control.sock'),
            'export_dir': os.path.join(base, 'exports'),
            'state_dir': os.path.join(base, 'state')}


def place_swapd_dirs(conf, state_dir):
    """Keep [swapd]'s directories where they are when they can be made;
    otherwise (a user without root: /run and /var/lib are not theirs) put
    them under ``state_dir``/swapd, for memagg-swapd and memagg-compute
    alike."""
    group = conf.swapd
    wanted = (os.path.dirname(group.control_socket), group.export_dir,
              group.state_dir)
    if all(_usable_dir(path) for path in wanted):
        return
    for name, value in _state_dir_swapd(state_dir).items():
        conf.set_override(name, value, group='swapd')
    LOG.info('memagg-swapd\'s directories go under %s (those of [swapd] '
             'cannot be made by this user)', os.path.join(state_dir, 'swapd'))


def private_swapd_defaults(conf, state_dir):
    """memagg-swapd's defaults for memagg-aio (a config file still wins):
    its socket and directories under ``state_dir``/swapd, donor
    connections from this host only."""
    for name, value in dict(_state_dir_swapd(state_dir),
                            listen=SWAPD_LISTEN).items():
        conf.set_default(name, value, group='swapd')


def stop_swapd(proc, timeout=SWAPD_STOP_TIMEOUT):
    """SIGTERM the memagg-swapd memagg-aio started (it shuts down cleanly
    on it), SIGKILL it after ``timeout`` s; return its exit status."""
    proc.terminate()
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        LOG.warning('memagg-swapd (pid %d) did not stop within %d s of '
                    'SIGTERM; killing it', proc.pid, timeout)
        proc.kill()
        return proc.wait()


def _answers(client):
    try:
        client.ping()
    except swapd_client.SwapdUnavailable:
        return False
    return True


def ensure_swapd(conf, state_dir, command=SWAPD_COMMAND,
                 timeout=SWAPD_START_TIMEOUT):
    """Start memagg-swapd when [swapd] is enabled and none answers; return
    its Popen (None when one answered already, when disabled, or when it
    did not come up: then this host has no remote memory, said in the
    log). Raises swapd_cmd.InvalidOption for an option it cannot run
    with."""
    if not conf.swapd.enabled:
        return None
    if _answers(swapd_client.SwapdClient(conf.swapd.control_socket,
                                         timeout=2)):
        LOG.info('memagg-swapd already answers on %s',
                 conf.swapd.control_socket)
        return None
    place_swapd_dirs(conf, state_dir)
    return spawn_swapd(swapd_cmd.options(conf), state_dir, 'swapd',
                       debug=conf.debug, command=command, timeout=timeout)


def spawn_swapd(options, state_dir, name, debug=False,
                command=SWAPD_COMMAND, timeout=SWAPD_START_TIMEOUT):
    """Start a memagg-swapd with ``options`` ({name: value} of [swapd]),
    its config, log and pid in ``state_dir``/NAME.conf, NAME.log and
    NAME.pid; wait until it answers on its control socket. Its Popen, or
    None when it exited at start."""
    config_path = os.path.join(state_dir, '%s.conf' % name)
    swapd_cmd.write_config(config_path, options, debug=debug)
    client = swapd_client.SwapdClient(options['control_socket'], timeout=2)
    log_path = os.path.join(state_dir, '%s.log' % name)
    argv = list(command) + ['--config-file', config_path]
    with open(log_path, 'ab') as log:
        # Its own session: Ctrl-C on memagg-aio's terminal does not reach
        # it, so memagg-aio stops it last, after the services that use it
        # (or keeps it: see the module's docstring).
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT,
                                start_new_session=True, close_fds=True)
    deadline = time.monotonic() + timeout
    while not _answers(client):
        if proc.poll() is not None:
            LOG.warning('memagg-swapd exited at start (status %s); no '
                        'remote memory on this host. Its log: %s',
                        proc.returncode, log_path)
            return None
        if time.monotonic() >= deadline:
            LOG.warning('memagg-swapd (pid %d) did not answer on %s within '
                        '%d s; its log: %s', proc.pid,
                        options['control_socket'], timeout, log_path)
            break
        time.sleep(0.1)
    with open(os.path.join(state_dir, '%s.pid' % name), 'w') as f:
        f.write('%d\n' % proc.pid)
    LOG.info('Started memagg-swapd (pid %d, log %s) on %s', proc.pid,
             log_path, options['control_socket'])
    return proc


def state_key_file(state_dir):
    """The key wrapping the grants' secrets in ``state_dir``'s database:
    STATE_DIR/secret.key, made (0600) on the first run; checked as
    [database] secret_key_file is. Returns its path."""
    path = os.path.join(state_dir, 'secret.key')
    if not os.path.exists(path):
        secret_box.create_key_file(path)
        LOG.info('Created %s, the key wrapping the grants\' secrets', path)
    secret_box.load_key(path, '[database] secret_key_file (memagg-aio\'s)')
    return path


class ApiService:
    """The REST API on a thread, with the start/stop of a Service."""

    def __init__(self, host, port):
        self.httpd = api_server.make_server(api_app.create_app(CONF), host,
                                            port)
        self.url = api_server.url(self.httpd)
        self._thread = threading.Thread(target=self.httpd.serve_forever,
                                        name='memagg-api', daemon=True)

    def start(self):
        self._thread.start()

    def stop(self):
        self.httpd.shutdown()
        self._thread.join()
        self.httpd.server_close()


DESCRIPTION = """\
memagg-aio runs memagg's API, scheduler and compute service in one process
on this host, on SQLite under a state directory and without
authentication, for a first run and for development; with --demo it boots
tiny real guests that show memagg at work. It prints the API's URL and
runs until Ctrl-C or SIGTERM."""


def _configure(argv):
    logging.register_options(CONF)
    # alembic narrates each migration at INFO, over several lines.
    logging.set_defaults(default_log_levels=logging.get_default_log_levels()
                         + ['alembic=WARN'])
    CONF.register_cli_opts(cli_opts)
    try:
        CONF(argv[1:], project='memagg', description=DESCRIPTION)
    except cfg.Error as exc:
        sys.exit('memagg-aio: error: %s' % exc)
    logging.setup(CONF, 'memagg')
    guru.enable(CONF, 'memagg-aio')
    state_dir = os.path.abspath(CONF.state_dir or default_state_dir())
    try:
        os.makedirs(state_dir, exist_ok=True)
        if not os.access(state_dir, os.W_OK):
            raise PermissionError('not writable')
    except OSError as exc:
        sys.exit('memagg-aio: error: cannot use --state-dir %s (%s); pass a '
                 'directory you can write to' % (state_dir, exc))
    CONF.set_override('state_path', state_dir)
    private_swapd_defaults(CONF, state_dir)
    CONF.set_override('connection', 'sqlite:///%s' % os.path.join(
        state_dir, 'memagg.sqlite'), group='database')
    try:
        CONF.set_override('secret_key_file', state_key_file(state_dir),
                          group='database')
    except (OSError, secret_box.KeyFileError) as exc:
        sys.exit('memagg-aio: error: %s' % exc)
    CONF.set_override('auth_strategy', 'noauth', group='api')
    CONF.set_override('libvirt_uri', libvirt_uri(), group='compute')
    api_app.set_api_defaults(CONF)
    if CONF.demo:
        demo_cloud.set_defaults(CONF)
        for piece in (demo_keystone, demo_horizon):
            if piece.missing():
                sys.exit('memagg-aio: error: --demo needs %s'
                         % piece.missing())
        began = time.time()
        try:
            _, initrd = demo_cloud.check_host(
                CONF.compute.libvirt_uri == SYSTEM_URI)
        except demo_cloud.Unavailable as exc:
            sys.exit('memagg-aio: error: %s' % exc)
        # A cached image predates this run; a built one was written now.
        cli.say('Guest image: %s (%s)' % (
            os.path.dirname(initrd), 'from the cache'
            if os.stat(initrd).st_mtime < began
            else 'built in %.0f s' % (time.time() - began)))
    return state_dir


def _fresh_dir(state_dir, name):
    """``state_dir``/NAME, emptied of an earlier run's files (0700)."""
    directory = pathlib.Path(state_dir) / name
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(mode=0o700)
    return directory


def _start_keystone(state_dir):
    """A new Keystone for the demo in ``state_dir``/keystone, memagg-api
    set to check tokens there; its demo_keystone.Server."""
    directory = _fresh_dir(state_dir, 'keystone')
    try:
        server = demo_keystone.start(directory)
    except (demo_keystone.Unavailable, RuntimeError) as exc:
        sys.exit('memagg-aio: error: Keystone did not start: %s' % exc)
    demo_keystone.check_api(CONF, server.keystone)
    return server


def _start_horizon(state_dir, keystone):
    """Horizon with memagg's panels for the demo, its files in
    ``state_dir``/horizon, logging in through ``keystone``."""
    directory = _fresh_dir(state_dir, 'horizon')
    try:
        return demo_horizon.start(directory, keystone.auth_url)
    except RuntimeError as exc:
        sys.exit('memagg-aio: error: Horizon did not start: %s' % exc)


def _register(server, url, state_dir):
    """memagg's API in the demo Keystone's catalog, and an openrc file per
    account (STATE_DIR/admin-openrc, member-openrc) for the CLI."""
    keystone = server.keystone
    keystone.register_endpoint('memory-aggregation', 'memagg', url)
    for name in ('admin', 'member'):
        path = os.path.join(state_dir, '%s-openrc' % name)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, 'w') as f:
            f.write(demo_keystone.openrc(keystone, getattr(keystone, name)))


def _start_donor(state_dir):
    """The demo's donor: a second memagg-swapd lending
    demo_cloud.DONOR_MB MiB on DONOR_LISTEN, and a compute service of its
    own (host HOST-donor, on libvirt's test driver: it runs no guest)
    driving it, as a donor host's. (Popen of its memagg-swapd, its
    Service); (None, None) when that memagg-swapd did not come up."""
    base = os.path.join(state_dir, 'donor-swapd')
    options = dict(
        swapd_cmd.options(CONF), listen=DONOR_LISTEN,
        capacity_mb=demo_cloud.DONOR_MB, socket_user=None,
        socket_group=None, control_socket=os.path.join(base, 'control.sock'),
        export_dir=os.path.join(base, 'exports'),
        state_dir=os.path.join(base, 'state'))
    for path in (options['export_dir'], options['state_dir']):
        os.makedirs(path, exist_ok=True)
    proc = spawn_swapd(options, state_dir, 'donor-swapd', debug=CONF.debug)
    if proc is None:
        return None, None
    manager = compute_manager.ComputeManager(
        host=CONF.host + '-donor',
        driver=hypervisor.load(CONF.compute.hypervisor_driver, TEST_URI),
        swapd_client=swapd_client.SwapdClient(options['control_socket'],
                                              CONF.swapd.control_timeout))
    return proc, service.Service(compute_manager.BINARY, compute_rpcapi.TOPIC,
                                 manager)


def _grant(instance_uuid, size_mb):
    """Remote memory for a demo guest of this host, from memagg-scheduler
    (as ``openstack memagg grant create --wait`` asks for it)."""
    return scheduler_rpcapi.SchedulerAPI().allocate_remote(
        context.get_admin_context(), instance_uuid, CONF.host, size_mb,
        timeout=demo_cloud.GRANT_TIMEOUT)


def _demo_help(keystone, state_dir, horizon_url):
    """What to run to watch the demo, logged in to its Keystone, and
    where its panels are."""
    openstack = os.path.join(os.path.dirname(sys.executable), 'openstack')
    admin, member = keystone.admin, keystone.member
    return ('Demo: %d guests boot now (%s*); memagg-compute looks at them '
            'every %d s.\n'
            'Keystone: %s (admin: %s / %s, project %s; member: %s / %s, '
            'project %s)\n'
            'Horizon: %s/admin/memory/ (log in with either)\n'
            'Watch: . %s && watch %s memagg instance list --long\n'
            'Then: %s memagg instance wss list UUID; %s memagg audit '
            'create; %s memagg audit list' % (
                len(demo_cloud.WORKLOADS), demo_cloud.PREFIX,
                CONF.compute.collect_interval, keystone.auth_url,
                admin.username, admin.password, admin.project_name,
                member.username, member.password, member.project_name,
                horizon_url, os.path.join(state_dir, 'admin-openrc'),
                openstack, openstack, openstack, openstack))


def main(argv=None):
    """Run memagg-aio until Ctrl-C or SIGTERM."""
    state_dir = _configure(argv or sys.argv)
    objects.register_all()
    db_facade.configure()
    migration.upgrade('head')
    rpc.init(url='fake://')
    try:
        swapd_proc = ensure_swapd(CONF, state_dir)
    except swapd_cmd.InvalidOption as exc:
        sys.exit('memagg-aio: error: %s' % exc)
    keystone = horizon = demo = donor_proc = None

    def ready():
        nonlocal demo
        lines = ['memagg-aio is running on %s (state in %s, libvirt %s)'
                 % (CONF.host, state_dir, CONF.compute.libvirt_uri),
                 'API: %s/' % api.url]
        if keystone is None:
            lines.append('Try: curl -s %s/v1/hosts' % api.url)
        lines.append('Stop with Ctrl-C.')
        if swapd_proc is not None:
            lines.append('memagg-swapd: pid %d, log %s; %s' % (
                swapd_proc.pid, os.path.join(state_dir, 'swapd.log'),
                'it keeps running after memagg-aio stops (kill $(cat %s) '
                'stops it)' % os.path.join(state_dir, 'swapd.pid')
                if CONF.keep_swapd else 'it stops with memagg-aio'))
        cli.say('\n'.join(lines))
        if CONF.demo:
            demo = demo_cloud.DemoCloud(
                libvirt.open(SYSTEM_URI),
                grant=_grant if donor_proc is not None else None,
                host_swap=True)
            cli.say(_demo_help(keystone.keystone, state_dir, horizon.url))
            demo.start()

    try:
        if CONF.demo:
            keystone = _start_keystone(state_dir)
        api = ApiService(CONF.bind_host, CONF.port)
        if keystone is not None:
            _register(keystone, api.url, state_dir)
            horizon = _start_horizon(state_dir, keystone.keystone)
        services = [
            api,
            service.Service(scheduler_manager.BINARY, CONF.scheduler.topic,
                            scheduler_manager.SchedulerManager()),
            service.Service(compute_manager.BINARY, compute_rpcapi.TOPIC,
                            compute_manager.ComputeManager()),
        ]
        if CONF.demo and swapd_proc is not None:
            donor_proc, donor = _start_donor(state_dir)
            if donor is not None:
                services.append(donor)
        service.run(services, ready=ready)
    finally:
        if demo is not None:
            demo.stop()
            demo.conn.close()
        if horizon is not None:
            horizon.stop()
        if keystone is not None:
            keystone.stop()
        if donor_proc is not None:
            LOG.info('The donor\'s memagg-swapd (pid %d) stopped with status '
                     '%s', donor_proc.pid, stop_swapd(donor_proc))
        if swapd_proc is not None and not CONF.keep_swapd:
            LOG.info('memagg-swapd (pid %d) stopped with status %s',
                     swapd_proc.pid, stop_swapd(swapd_proc))
    return 0


if __name__ == '__main__':
    sys.exit(main())
