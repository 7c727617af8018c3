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

"""memagg-scheduler's consumer of memagg-compute's report notifications.

Every worker listens on ``[scheduler] report_topic`` in one pool, the
topic's own queue ``<topic>.info`` (the queue the RabbitMQ driver declares
when a report is sent before any scheduler listens, so none is lost and no
second queue fills up), so RabbitMQ hands each report to one of them. A
worker takes up to ``report_batch_size`` reports (or what came within
``report_batch_timeout`` s) and stores them in one transaction
(memagg.db.reports.report_ingest_batch); the messages are acknowledged
after the commit, so a worker dying before it lets RabbitMQ deliver them
again, and storing them again stores nothing twice. While the database is
out the batch is requeued, not dropped.
"""
import re
import threading

from oslo_db import exception as db_exc
from oslo_log import log as logging
import oslo_messaging as messaging
from oslo_messaging._drivers import amqpdriver

from memagg.common import exceptions
from memagg.common import retry
from memagg.common import rpc
from memagg.db import report_columns
from memagg.db import reports as db_reports
from memagg.scheduler import rpcapi

LOG = logging.getLogger(__name__)

#: Seconds a worker waits before giving back a batch it could not store
#: because the database is out: requeued at once, it would come straight
#: back and spin.
REQUEUE_PAUSE = 1.0

#: Seconds the RabbitMQ driver's listeners first wait for a message when
#: none is ready, at least (oslo.messaging waits 1 ms, then 2, 4, ... after
#: each message): see pace_idle_polls.
IDLE_POLL = 0.05


def pace_idle_polls():
    """Make the RabbitMQ driver's listeners of this process wait at least
    IDLE_POLL for a message when none is ready.

    After each message, oslo.messaging's listener waits 1 ms for the next,
    then 2, 4, ..., each time-out a trip through kombu's retry wrappers
    and their exceptions; reports arriving every 10 ms cost the listener
    thread about 0.5 ms of CPU each that way, a quarter of a report's
    cost. The wait ends as soon as a message comes; what it delays is the
    listener thread's next look at the acknowledgements its handlers
    queued (and at a stop): up to IDLE_POLL later, which a batch stored
    after a worker's death stores nothing twice for. oslo.messaging has
    no option for this, so its module constant is raised.
    """
    if getattr(amqpdriver, 'ACK_REQUEUE_EVERY_SECONDS_MIN',
               IDLE_POLL) < IDLE_POLL:
        amqpdriver.ACK_REQUEUE_EVERY_SECONDS_MIN = IDLE_POLL


def pool_name(topic):
    """The queue (pool) every worker consumes ``topic``'s reports from."""
    return '%s.info' % topic


class ReportEndpoint:
    """Stores batches of ``memagg.compute.report`` notifications."""

    filter_rule = messaging.NotificationFilter(
        event_type='^%s$' % re.escape(rpcapi.SchedulerAPI.REPORT_EVENT))

    def __init__(self, context, stopping=None):
        self.context = context
        self._stopping = stopping or threading.Event()
        # Formats logged already: an old or new sender is told once, not
        # at every report.
        self._refused = set()

    def info(self, messages):
        """Store the reports of ``messages`` (oslo.messaging's batch
        endpoint); return REQUEUE when the database is out. A malformed
        report is logged and dropped: it would fail again at every
        delivery."""
        batch = []
        for message in messages:
            try:
                batch.append(report_columns.from_payload(message['payload']))
            except report_columns.UnknownFormat as exc:
                if str(exc) not in self._refused:
                    self._refused.add(str(exc))
                    LOG.error('Dropping reports from %s: %s',
                              message['publisher_id'], exc)
            except exceptions.Invalid as exc:
                LOG.error('Dropping a malformed report from %s: %s',
                          message['publisher_id'], exc)
        if not batch:
            return messaging.NotificationResult.HANDLED
        return self._store(batch)

    def _store(self, batch):
        """Store ``batch`` in one transaction: HANDLED, or REQUEUE while
        the database is out. When the database refuses it (a value out of
        its column's range, say), each report is stored alone, so that one
        report does not cost the others theirs; one refused alone is
        dropped."""
        try:
            db_reports.report_ingest_batch(self.context, batch)
        except db_exc.DBConnectionError as exc:
            LOG.error('%d report(s) not stored, the database is '
                      'unavailable; requeued: %s', len(batch), exc)
            self._stopping.wait(REQUEUE_PAUSE)
            return messaging.NotificationResult.REQUEUE
        except (db_exc.DBError, exceptions.Invalid) as exc:
            if len(batch) == 1:
                LOG.error('Dropping the report of %s taken at %s, which the '
                          'database refuses: %s',
                          batch[0]['host'].get('name'),
                          batch[0]['reported_at'], exc)
                return messaging.NotificationResult.HANDLED
            for report in batch:
                if (self._store([report]) ==
                        messaging.NotificationResult.REQUEUE):
                    return messaging.NotificationResult.REQUEUE
            return messaging.NotificationResult.HANDLED
        for report in batch:
            LOG.debug('Stored the report of %s', report['host']['name'])
        return messaging.NotificationResult.HANDLED


class ReportListener:
    """A batch notification listener of the report topic on the process's
    notification transport (memagg.common.rpc); start() returns at once
    and keeps trying while the bus cannot be reached."""

    def __init__(self, conf, context, retry_delay=5.0):
        self.conf = conf
        self.connected = threading.Event()
        self._stop = threading.Event()
        self._retry_delay = retry_delay
        self._transport = rpc.get_notification_transport()
        self.endpoint = ReportEndpoint(context, self._stop)
        self._listener = None
        self._lock = threading.Lock()
        pace_idle_polls()

    def _new_listener(self):
        topic = self.conf.scheduler.report_topic
        return messaging.get_batch_notification_listener(
            self._transport, [messaging.Target(topic=topic)],
            [self.endpoint], executor='threading', pool=pool_name(topic),
            allow_requeue=True,
            batch_size=self.conf.scheduler.report_batch_size,
            batch_timeout=self.conf.scheduler.report_batch_timeout)

    def start(self):
        """Start consuming in the background."""
        threading.Thread(target=self._connect, daemon=True,
                         name='memagg-scheduler-reports').start()

    def _started_listener(self):
        listener = self._new_listener()
        listener.start()
        return listener

    def _connect(self):
        # Tried every retry_delay s for as long as it takes: the stop ends
        # the wait.
        try:
            listener = retry.call(
                self._started_listener, what='Starting the report listener',
                policy=retry.Policy(None, self._retry_delay),
                retry_on=Exception, stop=self._stop)
        except Exception as exc:
            if not isinstance(exc, retry.Stopped):
                LOG.info('The report listener did not start before '
                         'memagg-scheduler stopped: %s', exc)
            return
        with self._lock:
            if self._stop.is_set():
                listener.stop()
                listener.wait()
                return
            self._listener = listener
            self.connected.set()
        LOG.info('Consuming reports from topic %s (pool %s)',
                 self.conf.scheduler.report_topic,
                 pool_name(self.conf.scheduler.report_topic))

    def stop(self):
        """Stop consuming (the batch being stored is finished and
        acknowledged first). A start still
        waiting for the bus is left to its daemon thread, which stops the
        listener if it ever starts."""
        with self._lock:
            self._stop.set()
            listener = self._listener
        if listener is not None:
            listener.stop()
            listener.wait()
