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

"""Client side of memagg-scheduler's RPC API."""
import oslo_messaging as messaging

from memagg.common import exceptions
from memagg.common import rpc
from memagg.conf import CONF
from memagg.db import report_columns
from memagg import objects
from memagg.objects import base as objects_base


class RemoteMemoryUnavailable(exceptions.Conflict):
    """No remote memory can be granted (or it could not be set up); the
    reason says why. Nothing is left allocated."""

    msg_fmt = 'No remote memory can be granted: %(reason)s'


#: The exceptions calls of this API raise, by class name: how they are
#: rebuilt when oslo.messaging hands over a RemoteError (the transport does
#: not rebuild memagg's exceptions itself).
_REMOTE_ERRORS = {cls.__name__: cls for cls in (
    RemoteMemoryUnavailable, exceptions.InvalidParameter, exceptions.Invalid,
    exceptions.NotFound, exceptions.Conflict,
    exceptions.ServiceUnavailable)}


class SchedulerAPI:
    """Calls to memagg-scheduler on topic ``[scheduler] topic``.

    API version history:

    * 1.0 - Initial version: report, report_batch, ping
    * 1.1 - run_audit, execute_audit
    * 1.2 - allocate_remote, release_grant, reclaim (the global memory
      reservoir)
    * 1.3 - release_grant takes consumer_host (grants follow live
      migrations)
    * 1.4 - finish_release, finish_reclaim (the API answers at once)
    * 1.5 - finish_allocation (POST /v1/grants answers at once)
    * 1.6 - reports are consumed from ``[scheduler] report_topic`` as
      ``memagg.compute.report`` notifications (columnar payload,
      memagg.db.report_columns); the ``report`` cast stays for
      senders pinned below 1.6 by ``[upgrade_levels] scheduler``
    * 1.7 - move_slabs (tiered remote memory: a consumer's demotions and
      promotions)
    """

    VERSION = '1.7'

    #: The event type of a report sent as a notification.
    REPORT_EVENT = 'memagg.compute.report'

    #: Attempts to reach the bus before a cast of the API gives up, so that
    #: a request fails (503) rather than hang while RabbitMQ is down.
    API_CAST_RETRY = 2

    #: Attempts to reach the bus before a report gives up (raising
    #: ServiceUnavailable): memagg-compute's period goes on while RabbitMQ
    #: is down, and its next report carries the state anew.
    REPORT_RETRY = 2

    def __init__(self, transport=None, notification_transport=None):
        """``transport`` and ``notification_transport`` (which reports go
        through) default to the process's (memagg.common.rpc)."""
        objects.register_all()
        self.client = rpc.Client(CONF.scheduler.topic, self.VERSION,
                                 version_cap=CONF.upgrade_levels.scheduler,
                                 transport=transport,
                                 serializer=(
                                     objects_base.MemaggObjectSerializer()))
        self._notification_transport = notification_transport
        self._notifier = None

    def report(self, ctxt, report):
        """Send one ComputeReport, no reply awaited: a
        ``memagg.compute.report`` notification of its columnar payload on
        ``[scheduler] report_topic``, or, while ``[upgrade_levels]
        scheduler`` pins the API below 1.6, the ``report`` cast that
        schedulers before 1.6 read. Raises ServiceUnavailable when the
        bus does not take it within REPORT_RETRY attempts."""
        if not self.client.can_send_version('1.6'):
            self.client.cast(ctxt, 'report', version='1.0', report=report,
                             retry=self.REPORT_RETRY)
            return
        if self._notifier is None:
            self._notifier = rpc.report_notifier(
                CONF.scheduler.report_topic, self._notification_transport
                or rpc.get_notification_transport())
        self._notifier.info({}, self.REPORT_EVENT,
                            report_columns.to_payload(report),
                            retry=self.REPORT_RETRY)

    def report_batch(self, ctxt, reports):
        """Send several ComputeReports in one message (cast)."""
        self.client.cast(ctxt, 'report_batch', version='1.0',
                         reports=reports)

    def ping(self, ctxt, timeout=None):
        """Return the answering scheduler's host and binary; raise
        RPCTimeout when none answers within ``timeout`` seconds."""
        return self.client.call(ctxt, 'ping', version='1.0', timeout=timeout)

    def run_audit(self, ctxt, audit_uuid, retry=API_CAST_RETRY):
        """Ask for pending audit ``audit_uuid`` to be planned (cast).

        Raises ServiceUnavailable when the bus cannot be reached in
        ``retry`` attempts (None: keep trying).
        """
        self.client.cast(ctxt, 'run_audit', version='1.1', retry=retry,
                         audit_uuid=audit_uuid)

    def execute_audit(self, ctxt, audit_uuid, retry=API_CAST_RETRY):
        """Ask for recommended audit ``audit_uuid``'s plan to be executed
        (cast); raises like run_audit."""
        self.client.cast(ctxt, 'execute_audit', version='1.1', retry=retry,
                         audit_uuid=audit_uuid)

    def finish_allocation(self, ctxt, grant_uuid, retry=API_CAST_RETRY):
        """Ask for grant ``grant_uuid``, reserved pending
        (memagg.scheduler.reservoir.Reservoir.reserve), to be set up on its
        donors and consumer (cast); raises like run_audit."""
        self.client.cast(ctxt, 'finish_allocation', version='1.5',
                         retry=retry, grant_uuid=grant_uuid)

    def finish_release(self, ctxt, grant_uuid, retry=API_CAST_RETRY):
        """Ask for the release of grant ``grant_uuid``, made releasing
        (memagg.scheduler.grant_returns.begin_release), to be carried out
        (cast); raises like run_audit."""
        self.client.cast(ctxt, 'finish_release', version='1.4', retry=retry,
                         grant_uuid=grant_uuid)

    def finish_reclaim(self, ctxt, donor_host, slabs, retry=API_CAST_RETRY):
        """Ask for the reclaim of ``slabs`` ({grant uuid: [index, ...]})
        lent by ``donor_host``, made reclaiming
        (memagg.scheduler.grant_returns.begin_reclaim), to be carried out
        (cast); raises like run_audit."""
        self.client.cast(ctxt, 'finish_reclaim', version='1.4', retry=retry,
                         donor_host=donor_host, slabs=slabs)

    def move_slabs(self, ctxt, grant_uuid, consumer_host, demote, promote):
        """Ask for slabs of grant ``grant_uuid``, consumed by
        ``consumer_host``, to change tier (cast): ``demote`` (indexes on
        donors) to its local copy only, ``promote`` (indexes in the local
        copy only) to donors with room. Raises ServiceUnavailable when the
        bus cannot be reached."""
        self.client.cast(ctxt, 'move_slabs', version='1.7',
                         retry=self.REPORT_RETRY, grant_uuid=grant_uuid,
                         consumer_host=consumer_host, demote=list(demote),
                         promote=list(promote))

    def _call(self, ctxt, method, timeout, version='1.2', **kwargs):
        try:
            return self.client.call(ctxt, method, version=version,
                                    timeout=timeout, **kwargs)
        except messaging.RemoteError as exc:
            cls = _REMOTE_ERRORS.get(exc.exc_type)
            if cls is None:
                raise
            raise cls(exc.value) from None

    def allocate_remote(self, ctxt, instance_uuid, consumer_host, size_mb,
                        timeout=None):
        """Grant ``size_mb`` MiB of remote memory to instance
        ``instance_uuid`` on ``consumer_host``, set up on the donors and
        attached on the consumer; return the grant dict (its ``secret``
        included: never show it to users).

        Less than asked is a grant with ``partial`` true and a ``reason``.
        Raises RemoteMemoryUnavailable (nothing granted, with the reason),
        NotFound (unknown instance), InvalidParameter, or RPCTimeout when
        no scheduler answers within ``timeout`` s.
        """
        return self._call(ctxt, 'allocate_remote', timeout,
                          instance_uuid=instance_uuid,
                          consumer_host=consumer_host, size_mb=size_mb)

    def release_grant(self, ctxt, grant_uuid, consumer_host=None,
                      timeout=None):
        """Give grant ``grant_uuid``'s memory back: the consumer moves its
        pages to its local copy, the donors free the slabs. Returns the
        grant dict; releasing a released grant does nothing. With
        ``consumer_host``, a grant consumed elsewhere (its VM was
        live-migrated) is not released: its dict names its consumer.
        Raises NotFound for an unknown grant, Conflict while its VM
        migrates."""
        if consumer_host is None:
            return self._call(ctxt, 'release_grant', timeout,
                              grant_uuid=grant_uuid)
        return self._call(ctxt, 'release_grant', timeout, version='1.3',
                          grant_uuid=grant_uuid,
                          consumer_host=consumer_host)

    def reclaim(self, ctxt, donor_host, size_mb, timeout=None):
        """Take up to ``size_mb`` MiB lent by ``donor_host`` back (whole
        slabs, from the VMs most over their L1 share first); return the
        MiB reclaimed. Raises
        NotFound for an unknown host."""
        return self._call(ctxt, 'reclaim', timeout, donor_host=donor_host,
                          size_mb=size_mb)
