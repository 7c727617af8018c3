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

"""The one place memagg builds its oslo.messaging transport, clients and
servers.

Every process calls :func:`init` once after parsing its configuration. The
transport comes from ``[DEFAULT] transport_url`` (``rabbit://...`` in
production, ``fake://`` for in-process messaging in memagg-aio and tests).
Servers use the ``threading`` executor: memagg runs no eventlet.

The notifier of memagg's versioned notifications (memagg.notifications) is
built here too, on a transport of its own: ``[oslo_messaging_notifications]
transport_url`` or, when unset, the RPC one.
"""
import os
import sys
import threading
import uuid

from kombu import exceptions as kombu_exc
import oslo_messaging as messaging
from oslo_utils import timeutils

from memagg.common import context as memagg_context
from memagg.common import exceptions
from memagg.conf import CONF

TRANSPORT = None
_URL = None
NOTIFIER = None
NOTIFICATION_TRANSPORT = None
# memagg-api's request threads may each be the first to need the bus.
_INIT_LOCK = threading.Lock()


def _binary():
    # The console scripts are memagg-<service>; under uwsgi or a test
    # runner the program says nothing about the service.
    name = os.path.basename(sys.argv[0])
    return name if name.startswith('memagg-') else 'memagg'


def init(conf=CONF, url=None, binary=None):
    """Build the process's transport and notifier; idempotent.

    ``url`` overrides ``[DEFAULT] transport_url`` (memagg-aio passes
    ``fake://``). ``binary`` (memagg-api, ...; by default the program's
    name when it is a memagg-* one) and ``[DEFAULT] host`` make the
    notifications' publisher_id, ``<binary>:<host>``.
    """
    if TRANSPORT is None:
        with _INIT_LOCK:
            if TRANSPORT is None:
                _init(conf, url, binary)
    return TRANSPORT


def _init(conf, url, binary):
    global TRANSPORT, _URL, NOTIFIER, NOTIFICATION_TRANSPORT
    transport = messaging.get_rpc_transport(conf, url=url)
    _URL = messaging.TransportURL.parse(conf, url or conf.transport_url)
    notifications = messaging.get_notification_transport(conf, url=url)
    # oslo.messaging sends nowhere by default (driver unset or noop): no
    # notifier then, so no payload is even built.
    if set(conf.oslo_messaging_notifications.driver) - {'noop'}:
        NOTIFIER = messaging.Notifier(
            notifications,
            publisher_id='%s:%s' % (binary or _binary(), conf.host),
            serializer=RequestContextSerializer())
    # Also memagg-compute's reports' and memagg-scheduler's listener's: on
    # fake:// they meet only on one transport.
    NOTIFICATION_TRANSPORT = notifications
    # Last: a thread that sees the transport set finds the rest ready.
    TRANSPORT = transport


def cleanup():
    """Close the transports (their connections); :func:`init` may run
    again."""
    global TRANSPORT, _URL, NOTIFIER, NOTIFICATION_TRANSPORT
    if TRANSPORT is not None:
        TRANSPORT.cleanup()
        NOTIFICATION_TRANSPORT.cleanup()
        TRANSPORT = _URL = NOTIFIER = NOTIFICATION_TRANSPORT = None


def get_notifier():
    """The process's notifier; None before :func:`init` or when no
    notification driver is configured (then nothing is sent)."""
    return NOTIFIER


def get_notification_transport():
    """The process's notification transport (see :func:`init`): the
    notifier's, memagg-compute's reports' and memagg-scheduler's report
    listener's."""
    if NOTIFICATION_TRANSPORT is None:
        raise RuntimeError('memagg.common.rpc.init() has not been called')
    return NOTIFICATION_TRANSPORT


def get_transport():
    """The process's transport (see :func:`init`)."""
    if TRANSPORT is None:
        raise RuntimeError('memagg.common.rpc.init() has not been called')
    return TRANSPORT


def bus_description():
    """The transport's ``driver://host:port`` without credentials (logs)."""
    url = _URL
    if url is None:
        return 'none'
    if not url.hosts:
        return '%s://' % url.transport
    return '%s://%s' % (url.transport, ','.join(
        '%s:%s' % (h.hostname, h.port) if h.port else str(h.hostname)
        for h in url.hosts))


#: What a send raises when the bus does not take the message: the rabbit
#: driver raises kombu's error when it cannot even connect within its
#: ``retry`` attempts.
BUS_ERRORS = (messaging.MessagingException, kombu_exc.KombuError, OSError)


def not_taken(what, topic, exc):
    """The ServiceUnavailable for ``what`` (a method or an event type) the
    bus did not take for ``topic``, ``exc`` being why."""
    return exceptions.ServiceUnavailable(
        reason='the message bus %s did not take %s for %s: %s' % (
            bus_description(), what, topic, exc))


class RequestContextSerializer(messaging.Serializer):
    """Carries the RequestContext, and the arguments and results through
    ``base`` (the caller's serializer: memagg's versioned objects' for the
    rpcapi modules and the services; none for plain JSON)."""

    def __init__(self, base=None):
        self._base = base or messaging.NoOpSerializer()

    def serialize_entity(self, context, entity):
        return self._base.serialize_entity(context, entity)

    def deserialize_entity(self, context, entity):
        return self._base.deserialize_entity(context, entity)

    def serialize_context(self, context):
        return context.to_dict()

    def deserialize_context(self, context):
        return memagg_context.RequestContext.from_dict(context)


class Client:
    """An RPC client of one topic whose ``call`` raises RPCTimeout.

    oslo.messaging's MessagingTimeout says nothing about which service did
    not answer; RPCTimeout names the target, the method and the timeout.
    """

    def __init__(self, topic, version, version_cap=None, transport=None,
                 serializer=None):
        self.topic = topic
        self._client = messaging.get_rpc_client(
            transport or get_transport(),
            messaging.Target(topic=topic, version=version),
            version_cap=version_cap,
            serializer=RequestContextSerializer(serializer))

    def can_send_version(self, version):
        return self._client.can_send_version(version)

    def cast(self, ctxt, method, server=None, version=None, retry=None,
             **kwargs):
        """Send ``method`` without waiting for it (fire and forget).

        ``retry`` bounds the attempts to reach the bus (None: forever);
        when they are spent, ServiceUnavailable is raised.
        """
        try:
            self._prepare(server, version, retry=retry).cast(
                ctxt, method, **kwargs)
        except BUS_ERRORS as exc:
            raise not_taken(method, self.topic, exc)

    def call(self, ctxt, method, server=None, version=None, timeout=None,
             **kwargs):
        """Run ``method`` on a server and return its result.

        Raises RPCTimeout when no reply comes within ``timeout`` seconds
        (``[DEFAULT] rpc_response_timeout`` when None).
        """
        try:
            return self._prepare(server, version, timeout).call(
                ctxt, method, **kwargs)
        except messaging.MessagingTimeout:
            target = self.topic if server is None else '%s.%s' % (
                self.topic, server)
            raise exceptions.RPCTimeout(
                target=target, method=method,
                timeout=timeout or CONF.rpc_response_timeout)

    def _prepare(self, server, version, timeout=None, retry=None):
        kwargs = {}
        if server is not None:
            kwargs['server'] = server
        if version is not None:
            kwargs['version'] = version
        if timeout is not None:
            kwargs['timeout'] = timeout
        if retry is not None:
            kwargs['retry'] = retry
        return self._client.prepare(**kwargs) if kwargs else self._client


def new_transport(conf=CONF):
    """A transport of its own (own connections), for a client that must
    not share the process's, such as a simulated compute node."""
    return messaging.get_rpc_transport(conf)


def new_notification_transport(conf=CONF):
    """A notification transport of its own (own connections), for a
    sender that must not share the process's, such as a simulated compute
    node: ``[oslo_messaging_notifications] transport_url`` or, when unset,
    the RPC one."""
    return messaging.get_notification_transport(conf)


class ReportSender:
    """Sends memagg-compute's reports as notifications on a topic, in
    oslo.messaging's message format 2.0 (as its ``messagingv2`` driver),
    and raises ServiceUnavailable when the bus does not take one.

    Not an oslo.messaging Notifier: a Notifier logs a failed send with a
    traceback and the whole payload and carries on, so the sender could
    not tell; and the rabbit driver fails a message sent while the bus is
    down, whatever the retry, once kombu's connect timeout (5 s) has passed
    on a connection it had to reset."""

    def __init__(self, topic, transport, publisher_id):
        self.topic = topic
        self.transport = transport
        self.publisher_id = publisher_id

    def info(self, ctxt, event_type, payload, retry=None):
        """Send ``payload`` (plain JSON) as an INFO ``event_type``;
        ``retry`` bounds the attempts to reach the bus (None: forever)."""
        message = {'message_id': str(uuid.uuid4()),
                   'publisher_id': self.publisher_id,
                   'event_type': event_type, 'priority': 'INFO',
                   'payload': payload,
                   'timestamp': str(timeutils.utcnow())}
        try:
            self.transport._send_notification(
                messaging.Target(topic='%s.info' % self.topic), ctxt,
                message, version=2.0, retry=retry)
        except BUS_ERRORS as exc:
            raise not_taken(event_type, self.topic, exc)


def report_notifier(topic, transport, binary=None, conf=CONF):
    """The ReportSender of memagg-compute's reports on ``topic`` through
    ``transport``, whatever ``[oslo_messaging_notifications] driver`` says:
    the reports are memagg's own traffic, not notifications for others."""
    return ReportSender(topic, transport,
                        '%s:%s' % (binary or _binary(), conf.host))


def get_server(topic, server, endpoints, serializer=None):
    """An RPC server of ``topic`` named ``server``, its arguments and
    results through ``serializer`` (see RequestContextSerializer).

    oslo.messaging picks its threading executor itself, as nothing in memagg
    is monkey-patched.

    Only endpoint methods decorated with ``oslo_messaging.expose`` can be
    called: a manager's other public methods (periodic tasks, set-up) are
    not RPC.
    """
    target = messaging.Target(topic=topic, server=server)
    return messaging.get_rpc_server(
        get_transport(), target, endpoints,
        serializer=RequestContextSerializer(serializer),
        access_policy=messaging.ExplicitRPCAccessPolicy)
