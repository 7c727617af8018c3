"""memagg-aio: API, scheduler and compute in one process on this host.

For a first run and for development: SQLite under a state directory
(migrated to head at start), in-process messaging (``fake://``), the API
without authentication, and libvirt at qemu:///system when a libvirtd
answers (libvirt's test:///default driver otherwise). It prints the API URL
and an example request, then runs until Ctrl-C or SIGTERM.
"""
import os
import sys
import threading

from oslo_config import cfg
from oslo_log import log as logging

from memagg.api import app as api_app
from memagg.api import server as api_server
from memagg.common import rpc
from memagg.compute import manager as compute_manager
from memagg.compute import rpcapi as compute_rpcapi
from memagg.conf import CONF
from memagg.db import api as db_api
from memagg.db import migration
from memagg.drivers.hypervisor import libvirt_driver
from memagg import objects
from memagg.scheduler import manager as scheduler_manager
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
]


def default_state_dir():
    """Per-user state directory (XDG base directory specification)."""
    base = os.environ.get('XDG_STATE_HOME') or os.path.join(
        os.path.expanduser('~'), '.local', 'state')
    return os.path.join(base, 'memagg')


def libvirt_uri():
    """qemu:///system when a libvirtd answers there, else test:///default."""
    return SYSTEM_URI if libvirt_driver.answers(SYSTEM_URI) else TEST_URI


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


def _configure(argv):
    logging.register_options(CONF)
    CONF.register_cli_opts(cli_opts)
    try:
        CONF(argv[1:], project='memagg')
    except cfg.Error as exc:
        sys.exit('memagg-aio: error: %s' % exc)
    logging.setup(CONF, 'memagg')
    state_dir = os.path.abspath(CONF.state_dir or default_state_dir())
    try:
        os.makedirs(state_dir, exist_ok=True)
        if not os.access(state_dir, os.W_OK):
            raise PermissionError('not writable')
    except OSError as exc:
        sys.exit('memagg-aio: error: cannot use --state-dir %s (%s); pass a '
                 'directory you can write to' % (state_dir, exc))
    CONF.set_override('state_path', state_dir)
    CONF.set_override('connection', 'sqlite:///%s' % os.path.join(
        state_dir, 'memagg.sqlite'), group='database')
    CONF.set_override('auth_strategy', 'noauth', group='api')
    CONF.set_override('libvirt_uri', libvirt_uri(), group='compute')
    api_app.set_api_defaults(CONF)
    return state_dir


def main(argv=None):
    """Run memagg-aio until Ctrl-C or SIGTERM."""
    state_dir = _configure(argv or sys.argv)
    objects.register_all()
    db_api.configure()
    migration.upgrade('head')
    rpc.init(url='fake://')
    api = ApiService(CONF.bind_host, CONF.port)
    services = [
        api,
        service.Service(scheduler_manager.BINARY, CONF.scheduler.topic,
                        scheduler_manager.SchedulerManager()),
        service.Service(compute_manager.BINARY, compute_rpcapi.TOPIC,
                        compute_manager.ComputeManager()),
    ]

    def ready():
        print('memagg-aio is running on %s (state in %s, libvirt %s)\n'
              'API: %s/\n'
              'Try: curl -s %s/v1/hosts\n'
              'Stop with Ctrl-C.' % (CONF.host, state_dir,
                                     CONF.compute.libvirt_uri, api.url,
                                     api.url), flush=True)

    service.run(services, ready=ready)
    return 0


if __name__ == '__main__':
    sys.exit(main())
