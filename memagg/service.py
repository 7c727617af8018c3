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

"""Thread-based service runner for memagg-scheduler and memagg-compute.

A :class:`Service` serves its manager's RPC endpoints, writes a heartbeat to
the services table every ``[DEFAULT] report_interval`` and runs the manager's
periodic tasks, each on its own thread. Every loop waits on one stop Event,
so :meth:`Service.stop` ends them at once. :func:`run` installs SIGTERM and
SIGINT handlers and blocks until one arrives.

When the message bus cannot be reached at start, oslo.messaging keeps
reconnecting (with the backoff of ``[oslo_messaging_rabbit]
rabbit_retry_interval``, ``rabbit_retry_backoff`` and ``rabbit_interval_max``)
and the service logs that it is still retrying; heartbeats and periodic
tasks begin once the RPC server is connected, so a service whose row is up
is one that RPC can reach.
"""
import dataclasses
import os
import signal
import sys
import threading
import time
import typing

from oslo_config import cfg
from oslo_db import exception as db_exc
from oslo_log import log as logging
import oslo_messaging as messaging

from memagg.common import context as memagg_context
from memagg.common import exceptions
from memagg.common import guru
from memagg.common import retry
from memagg.common import rpc
from memagg.conf import CONF
from memagg.db import facade as db_facade
from memagg.db import services as db_services
from memagg import objects
from memagg.objects import base as objects_base

LOG = logging.getLogger(__name__)

# The RPC server's start is tried again until the service stops, 1 s after
# its first failure, doubling up to a minute; the "still retrying" lines
# of a bus not reached yet come at the same intervals.
_CONNECT_RETRIES = retry.Policy(attempts=None, interval=1.0, doubling=True,
                                max_interval=60.0)
# How long run()'s main thread blocks at most before it runs the Python
# handlers of signals that the kernel gave to another thread.
_SIGNAL_CHECK_S = 0.5


@dataclasses.dataclass
class PeriodicTask:
    """A manager's job run every ``interval`` seconds on its own thread,
    the first time ``first_after`` seconds after the service connected."""

    name: str
    interval: float
    func: typing.Callable[[], None]
    first_after: float = 0.0


class Manager:
    """Base of the RPC managers: endpoints plus periodic tasks."""

    def __init__(self, host=None):
        self.host = host or CONF.host
        self.admin_context = memagg_context.get_admin_context()

    def periodic_tasks(self):
        """The PeriodicTasks the service runs once RPC is connected."""
        return []

    def init_host(self):
        """Called by the service before its RPC server starts."""

    def cleanup_host(self):
        """Called by the service after its RPC server stopped."""


def prepare_service(argv, default_config_files=None, description=None):
    """Parse ``argv`` into CONF (``description`` opens --help), set up
    logging, objects and the transport."""
    logging.register_options(CONF)
    try:
        CONF(argv[1:], project='memagg', description=description,
             default_config_files=default_config_files)
    except cfg.Error as exc:
        # One line naming the problem, not a traceback.
        sys.exit('%s: error: %s' % (os.path.basename(argv[0]), exc))
    logging.setup(CONF, 'memagg')
    guru.enable(CONF, os.path.basename(argv[0]))
    objects.register_all()
    db_facade.configure()
    try:
        rpc.init(CONF)
    except (messaging.InvalidTransportURL, messaging.DriverLoadFailure) as exc:
        sys.exit('%s: error: [DEFAULT] transport_url: %s; use e.g. '
                 'rabbit://USER:PASSWORD@HOST:5672/' % (
                     os.path.basename(argv[0]), exc))


class Service:
    """One RPC service (binary, topic, manager) with heartbeats and tasks."""

    def __init__(self, binary, topic, manager, host=None):
        self.binary = binary
        self.topic = topic
        self.manager = manager
        self.host = host or manager.host
        self.connected = threading.Event()
        self._stop = threading.Event()
        self._threads = []
        self._server = None
        self._rpc_thread = None

    def start(self):
        """Start serving in the background; return at once."""
        self.manager.init_host()
        LOG.info('%s connecting to the message bus %s', self.binary,
                 rpc.bus_description())
        self._rpc_thread = self._spawn('%s-rpc' % self.binary, self._connect)
        self._spawn('%s-connect-log' % self.binary, self._log_connecting)

    def _spawn(self, name, target, *args):
        thread = threading.Thread(target=target, args=args, name=name,
                                  daemon=True)
        thread.start()
        self._threads.append(thread)
        return thread

    def _start_server(self):
        server = rpc.get_server(
            self.topic, self.host, [self.manager],
            serializer=objects_base.MemaggObjectSerializer())
        server.start()
        return server

    def _connect(self):
        # server.start() blocks inside oslo.messaging while it reconnects;
        # this thread is a daemon so a stop during that wait does not hang.
        # oslo.messaging gives up on errors other than an unreachable bus
        # (e.g. a queue declared with other arguments): a new server is
        # tried after a pause, for as long as the service runs.
        try:
            server = retry.call(
                self._start_server, what='%s starting its RPC server'
                % self.binary, policy=_CONNECT_RETRIES, retry_on=Exception,
                stop=self._stop)
        except Exception:
            # The attempts are unlimited: only the service's stop ends
            # them.
            return
        self._server = server
        if self._stop.is_set():
            server.stop()
            server.wait()
            return
        self.connected.set()
        LOG.info('%s connected to the message bus %s; serving topic %s '
                 'as %s', self.binary, rpc.bus_description(), self.topic,
                 self.host)
        self._spawn('%s-heartbeat' % self.binary, self._loop, PeriodicTask(
            'heartbeat', CONF.report_interval, self._heartbeat))
        for task in self.manager.periodic_tasks():
            self._spawn('%s-%s' % (self.binary, task.name), self._loop, task)

    def _log_connecting(self):
        waited, lines = 0.0, 0
        while True:
            delay = _CONNECT_RETRIES.wait(lines + 1)
            if self._stop.wait(delay) or self.connected.is_set():
                return
            waited += delay
            lines += 1
            LOG.warning('%s: not connected to the message bus %s after '
                        '%.0f s; still retrying with backoff (the service '
                        'keeps running)', self.binary, rpc.bus_description(),
                        waited)

    def _heartbeat(self):
        db_services.service_heartbeat(self.manager.admin_context, self.host,
                                      self.binary, self.topic)

    def _loop(self, task):
        if self._stop.wait(task.first_after):
            return
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                task.func()
            except (db_exc.DBConnectionError, exceptions.RPCTimeout) as exc:
                # The database or a peer is out: one line per period; its
                # traceback would say nothing more and flood the log.
                LOG.error('%s: periodic task %s failed; next run in %s s: '
                          '%s', self.binary, task.name, task.interval, exc)
            except Exception:
                # One failed period must not end the task.
                LOG.exception('%s: periodic task %s failed; next run in '
                              '%s s', self.binary, task.name, task.interval)
            elapsed = time.monotonic() - started
            if self._stop.wait(max(0.0, task.interval - elapsed)):
                break

    def stop(self):
        """Stop the tasks and the RPC server; wait for the task threads."""
        self._stop.set()
        if self.connected.is_set():
            self._server.stop()
            self._server.wait()
        for thread in list(self._threads):
            # The RPC thread may still be inside oslo.messaging's reconnect
            # loop, which cannot be interrupted; it is a daemon thread.
            if thread is not self._rpc_thread or self.connected.is_set():
                thread.join()
        self.manager.cleanup_host()
        LOG.info('%s on %s stopped', self.binary, self.host)


def run(services, ready=None):
    """Start ``services``, block until SIGTERM or SIGINT, then stop them.
    SIGHUP reloads the config files: options marked mutable (logging's
    ``debug`` and log levels among them) take their new values, the others
    are logged as needing a restart.

    ``ready`` (a callable) runs once every service has been started.
    """
    stop = threading.Event()

    def _handler(signum, frame):
        LOG.info('Received %s; stopping', signal.Signals(signum).name)
        stop.set()

    def _reload(signum, frame):
        LOG.info('Received SIGHUP; reloading the configuration files')
        CONF.mutate_config_files()

    previous = {sig: signal.signal(sig, _handler)
                for sig in (signal.SIGTERM, signal.SIGINT)}
    previous[signal.SIGHUP] = signal.signal(signal.SIGHUP, _reload)
    try:
        for service in services:
            service.start()
        if ready is not None:
            ready()
        # A signal the kernel hands to another thread runs its handler only
        # when the main thread next runs bytecode: an untimed wait held
        # SIGTERM, SIGHUP or SIGUSR2 (the Guru Meditation Report) for good.
        while not stop.wait(_SIGNAL_CHECK_S):
            pass
    finally:
        for service in reversed(services):
            service.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
