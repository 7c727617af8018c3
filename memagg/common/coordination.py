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

"""Coordination of several memagg-scheduler workers through tooz.

Every worker serves the RPC topic (reports, audits and grants go to any
one of them); the jobs that must run once in the cluster run on the leader
only. The leader is the worker that holds the topic's leader lock on the
``[coordination] backend_url`` backend: the others try to take it every
``[coordination] election_interval`` seconds, so a dead leader's jobs move
to another worker once the backend has freed its lock (at once on MySQL,
whose named locks end with the holder's connection; after the lock's
``timeout`` on Redis, where tooz's heartbeat renews the locks of live
workers) plus at most one election interval.

Work a worker carries out for minutes (planning or executing an audit,
setting up a grant, following a durability copy) is *claimed* under a lock
of its own, taken before the DB row changes state: a worker resuming what
a dead worker left finds the claim free only once that worker is gone.

With ``backend_url`` empty there is one worker: it is always the leader
and every claim succeeds, which is the behaviour of a single
memagg-scheduler.
"""
import contextlib
import hashlib
import threading
import uuid

from oslo_log import log as logging
from stevedore import exception as stevedore_exc
import tooz
from tooz import coordination as tooz_coordination

from memagg.common import exceptions

LOG = logging.getLogger(__name__)

#: Seconds a stop waits for the election thread.
_STOP_WAIT = 10

#: MySQL's limit on a named lock's length (GET_LOCK).
_MAX_LOCK_NAME = 64


@contextlib.contextmanager
def no_claim(what):
    """A claim of ``what`` that always succeeds: the claim of a single
    worker, and the default of the objects that take a ``claim``."""
    yield True


class Coordinator:
    """One worker's membership: leadership and claims, on ``namespace``
    (the RPC topic: workers of another topic never contend).

    ``conf`` is the ConfigOpts holding [coordination]; ``member_id``
    defaults to ``[DEFAULT] host`` plus a random suffix, as several workers
    may run on one host.
    """

    def __init__(self, conf, namespace, member_id=None):
        self._group = conf.coordination
        self.namespace = namespace
        self.member_id = member_id or '%s-%s' % (conf.host,
                                                 uuid.uuid4().hex[:8])
        self._coordinator = None
        self._started = False
        self._leader_lock = None
        self._leader = threading.Event()
        self._stop = threading.Event()
        self._thread = None

    @property
    def enabled(self):
        """Whether a backend is configured (several workers)."""
        return bool(self._group.backend_url)

    def lock_name(self, what):
        """The backend's name of the lock of ``what`` in this namespace."""
        name = 'memagg.%s.%s' % (self.namespace, what)
        if len(name) > _MAX_LOCK_NAME:
            name = 'memagg.%s' % hashlib.sha1(name.encode()).hexdigest()
        return name

    def start(self):
        """Join the backend and start electing; return at once.

        Raises InvalidParameter naming [coordination] backend_url when its
        scheme names no tooz driver. An unreachable backend is retried in
        the background (the worker is then not the leader and claims
        nothing)."""
        if not self.enabled:
            return
        try:
            self._coordinator = tooz_coordination.get_coordinator(
                self._group.backend_url, self.member_id.encode())
        except (stevedore_exc.NoMatches, tooz.ToozError, ValueError) as exc:
            raise exceptions.InvalidParameter(
                field='[coordination] backend_url',
                reason='%s; use a tooz URL such as mysql://USER:PASSWORD@'
                       'HOST/DBNAME or redis://HOST:6379, or leave it empty '
                       'for a single worker' % (
                           exc or type(exc).__name__)) from None
        self._thread = threading.Thread(target=self._elect, daemon=True,
                                        name='memagg-coordination')
        self._thread.start()

    def stop(self):
        """Give up leadership and leave the backend."""
        if self._thread is None:
            return
        self._stop.set()
        # A daemon thread: one still trying an unreachable backend (a
        # driver may retry for a minute) does not hold the stop up.
        self._thread.join(_STOP_WAIT)
        self._step_down('it stops', stopping=True)
        if self._started:
            try:
                self._coordinator.stop()
            except tooz.ToozError as exc:
                LOG.warning('Leaving the coordination backend failed: %s',
                            exc)

    def is_leader(self):
        """Whether this worker runs the jobs that run once in the cluster
        (always, with no backend)."""
        return not self.enabled or self._leader.is_set()

    def wait_leader(self, timeout):
        """Whether this worker is the leader within ``timeout`` s."""
        return not self.enabled or self._leader.wait(timeout)

    @contextlib.contextmanager
    def claim(self, what):
        """Hold the lock of ``what`` (e.g. ``audit-<uuid>``) for the
        block, without waiting; the block gets whether it was taken (always
        with no backend). Not taken means another live worker holds it, or
        the backend cannot be reached."""
        if not self.enabled:
            with no_claim(what) as taken:
                yield taken
            return
        if not self._started:
            yield False
            return
        lock = self._coordinator.get_lock(self.lock_name(what).encode())
        try:
            taken = lock.acquire(blocking=False)
        except tooz.ToozError as exc:
            LOG.warning('Could not claim %s on the coordination backend: '
                        '%s', what, exc)
            taken = False
        try:
            yield taken
        finally:
            if taken:
                try:
                    lock.release()
                except tooz.ToozError as exc:
                    # The backend frees it with the connection or on
                    # expiry.
                    LOG.warning('Could not release the claim on %s: %s',
                                what, exc)

    def _elect(self):
        while not self._stop.is_set():
            try:
                self._elect_once()
            except Exception:
                # The backend going away must not end the election thread.
                LOG.exception('Coordination: election step failed')
                self._step_down('the coordination backend failed')
            self._stop.wait(self._group.election_interval)

    def _elect_once(self):
        if not self._started:
            try:
                self._coordinator.start(start_heart=True)
            except tooz.ToozError as exc:
                LOG.warning('Coordination backend not reachable yet: %s; '
                            'trying again in %s s', exc,
                            self._group.election_interval)
                return
            self._started = True
            LOG.info('Joined the coordination backend as %s',
                     self.member_id)
        if self._leader.is_set():
            if not self._still_leader():
                self._step_down('its leader lock was lost')
            return
        lock = self._coordinator.get_lock(self.lock_name('leader').encode())
        if lock.acquire(blocking=False):
            self._leader_lock = lock
            self._leader.set()
            LOG.info('%s is now the leader of %s: it runs the jobs that run '
                     'once in the cluster', self.member_id, self.namespace)

    def _still_leader(self):
        # Redis locks expire: tooz's heartbeat renews them, and renewing
        # one that expired fails. MySQL locks last as long as their
        # connection, which tooz does not renew.
        heartbeat = getattr(self._leader_lock, 'heartbeat', None)
        if heartbeat is None:
            return True
        try:
            return bool(heartbeat())
        except Exception:
            # tooz passes the Redis client's LockError through.
            return False

    def _step_down(self, why, stopping=False):
        lock, self._leader_lock = self._leader_lock, None
        if not self._leader.is_set():
            return
        self._leader.clear()
        (LOG.info if stopping else LOG.warning)(
            '%s is no longer the leader of %s: %s', self.member_id,
            self.namespace, why)
        try:
            lock.release()
        except Exception as exc:
            LOG.debug('Releasing the leader lock failed: %s', exc)
