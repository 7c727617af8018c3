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

"""memagg-api: serve the REST API under uWSGI.

The process becomes a uWSGI master (the ``pyuwsgi`` wheel runs the server
in this interpreter) that listens with an HTTP socket on ``[api]
host``:``port`` and forks ``[api] workers`` processes of ``[api] threads``
threads each. Every worker imports ``memagg.wsgi.api`` after the fork
(lazy-apps), so each builds its own application, database pool and
message bus connection; the configuration this process was given reaches
them through the environment (MEMAGG_CONFIG_FILES, MEMAGG_CONFIG_DIRS and,
for logging options on the command line, OS_DEFAULT__*). SIGTERM stops the
master and its workers at once (die-on-term).
"""
import os
import signal
import sys

from oslo_config import cfg
from oslo_log import log as logging
import pyuwsgi

from memagg.conf import api as api_opts
from memagg.conf import CONF
from memagg import wsgi

LOG = logging.getLogger(__name__)

PROG = 'memagg-api'

#: What the workers load (module:callable).
APPLICATION = 'memagg.wsgi.api:application'

#: Largest request head uWSGI accepts, in bytes. Its default (4 KiB) would
#: refuse requests whose Keystone tokens or service tokens make the headers
#: longer.
BUFFER_SIZE = 65535

_FIXES = {
    'path_prefix': 'give a path such as /memory-aggregation (starting with '
                   '"/", without a trailing "/"), or leave it empty',
}


def _option(name):
    """``[api] name``, or exit with one line naming it and the fix."""
    try:
        return getattr(CONF.api, name)
    except cfg.Error as exc:
        # oslo.config says where the value came from, then why it is bad.
        reason = str(exc).rpartition('is not valid: ')[2]
        sys.exit("%s: error: Invalid value for '[api] %s': %s" % (
            PROG, name, _FIXES.get(name, reason)))


def _address(host, port):
    return '[%s]:%d' % (host, port) if ':' in host else '%s:%d' % (
        host, port)


def uwsgi_arguments():
    """uWSGI's command line from CONF's [api] options; exits naming the
    first bad one."""
    for opt in api_opts.opts:
        _option(opt.dest)
    workers = _option('workers') or os.cpu_count() or 1
    prefix = _option('path_prefix')
    if prefix:
        # manage-script-name moves the prefix from PATH_INFO to
        # SCRIPT_NAME, which the links in responses are built from.
        app = ['--mount', '%s=%s' % (prefix, APPLICATION),
               '--manage-script-name']
    else:
        app = ['--module', APPLICATION]
    return [
        '--strict',
        '--master',
        '--http-socket', _address(_option('host'), _option('port')),
        '--processes', str(workers),
        '--threads', str(_option('threads')),
        '--enable-threads',
        # No --thunder-lock: its lock, shared by the workers, deadlocks
        # when they are killed together (a worker waited for it through
        # uWSGI's 60 s mercy on SIGTERM, in CI; unbit/uwsgi#1028, #1571),
        # and two workers have no thundering herd to speak of.
        '--lazy-apps',
        '--need-app',
        '--die-on-term',
        '--no-orphans',
        '--buffer-size', str(BUFFER_SIZE),
        # The HTTP socket serves one request per connection; saying so
        # keeps clients from sending the next one on a closed connection.
        '--add-header', 'Connection: close',
    ] + app


def _pass_config_to_workers():
    """Put this command line's configuration where the workers'
    memagg.wsgi.configure finds it: the config files and directories, and
    the logging options given (--debug, --log-file...) as oslo.config's
    OS_DEFAULT__<OPTION> variables, which win over config files as the
    command line does."""
    os.environ[wsgi.CONFIG_FILES_ENV] = ','.join(
        os.path.abspath(path) for path in CONF.config_file)
    os.environ[wsgi.CONFIG_DIRS_ENV] = ','.join(
        os.path.abspath(path) for path in CONF.config_dir or [])
    for name in CONF:
        if name in ('config_file', 'config_dir') or isinstance(
                CONF[name], cfg.ConfigOpts.GroupAttr):
            continue
        location = CONF.get_location(name)
        if location is None or (
                location.location != cfg.Locations.command_line):
            continue
        value = CONF[name]
        os.environ['OS_DEFAULT__%s' % name.upper()] = (
            str(value).lower() if isinstance(value, bool) else str(value))


DESCRIPTION = """\
memagg-api serves memagg's REST API (hosts, instances, grants, audits,
migrations) under uWSGI on [api] host and port, as the openstack CLI, the
Horizon panel and Nova's filter use it. It runs until SIGTERM."""


def main(argv=None):
    """Parse --config-file etc., check the [api] options, then run uWSGI
    on [api] host:port until SIGTERM."""
    logging.register_options(CONF)
    try:
        CONF(sys.argv[1:] if argv is None else argv, project='memagg',
             prog=PROG, description=DESCRIPTION)
    except cfg.Error as exc:
        sys.exit('%s: error: %s' % (PROG, exc))
    logging.setup(CONF, 'memagg')
    arguments = uwsgi_arguments()
    _pass_config_to_workers()
    LOG.info('memagg-api serving on http://%s%s/ (auth_strategy %s)',
             _address(CONF.api.host, CONF.api.port), CONF.api.path_prefix,
             CONF.api.auth_strategy)
    # Each worker parses the configuration itself when it imports
    # memagg.wsgi.api, as under any WSGI server: it must not inherit this
    # process's parse.
    CONF.clear()
    # uWSGI stops workers with SIGINT. Python's handler, inherited over the
    # fork, would turn it into KeyboardInterrupt in a worker still loading
    # the app: a failed load, and need-app's exit status 22 for a stop.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    pyuwsgi.run(*arguments)


if __name__ == '__main__':
    sys.exit(main())
