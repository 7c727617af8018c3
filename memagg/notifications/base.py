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

"""What every memagg notification shares: its payload base class and the
emitting of a payload after a state change.

The notifier is built by :func:`memagg.common.rpc.init` on a transport of
its own (``[oslo_messaging_notifications]``); with oslo.messaging's default
driver (none, "noop") nothing is sent.
"""
from oslo_log import log as logging
from oslo_versionedobjects import fields

from memagg.common import rpc
from memagg.objects import base

LOG = logging.getLogger(__name__)


class NotificationPayloadBase(base.MemaggObject):
    """Base of the payloads: the fields of a state change of one resource.

    A subclass lists its fields; :meth:`from_row` copies those that are
    columns of the database row; ``previous_state`` is the state the change
    left (None when the resource was just created).
    """

    #: The state column of the resource's row.
    STATE_COLUMN = 'state'

    fields = {
        'previous_state': fields.StringField(nullable=True),
    }

    @classmethod
    def from_row(cls, row, previous, **extra):
        """The payload of ``row`` (a model object) that left ``previous``;
        ``extra`` sets the fields that are not columns of the row."""
        payload = cls(previous_state=previous, **extra)
        for name in cls.fields:
            if name != 'previous_state' and name not in extra:
                setattr(payload, name, getattr(row, name))
        return payload


def event_type(resource):
    """The event type of a state change of ``resource`` (audit, ...)."""
    return 'memagg.%s.update' % resource


def state_changed(context, payload_cls, resource, row, previous, **extra):
    """Send the INFO notification ``memagg.<resource>.update`` of ``row``'s
    change from ``previous`` (see :meth:`NotificationPayloadBase.from_row`)
    unless it did not change.

    Called once the change is committed: a notification that cannot be
    built or sent is logged and never fails the change.
    """
    notifier = rpc.get_notifier()
    if notifier is None or previous == getattr(row,
                                               payload_cls.STATE_COLUMN):
        return
    try:
        notifier.info(context, event_type(resource),
                      payload_cls.from_row(row, previous,
                                           **extra).obj_to_primitive())
    except Exception:
        LOG.exception('Could not send notification %s of %s %s',
                      event_type(resource), resource,
                      getattr(row, 'uuid', getattr(row, 'id', None)))
