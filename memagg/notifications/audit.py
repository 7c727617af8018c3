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

"""Notifications of audits' state changes (memagg.audit.update) and of
their actions' (memagg.action.update)."""
from oslo_versionedobjects import fields

from memagg.notifications import base
from memagg.objects import base as objects_base


@objects_base.MemaggObjectRegistry.register
class AuditPayload(base.NotificationPayloadBase):
    """An audit's state change."""

    # Version 1.0: first version
    VERSION = '1.0'

    fields = dict(base.NotificationPayloadBase.fields, **{
        'uuid': fields.UUIDField(),
        'state': fields.StringField(),
        'reason': fields.StringField(nullable=True),
        'memory_basis': fields.StringField(),
        'auto_execute': fields.BooleanField(),
        'created_at': fields.DateTimeField(nullable=True),
        'updated_at': fields.DateTimeField(nullable=True),
        'finished_at': fields.DateTimeField(nullable=True),
    })


@objects_base.MemaggObjectRegistry.register
class ActionPayload(base.NotificationPayloadBase):
    """An audit action's state change."""

    # Version 1.0: first version
    VERSION = '1.0'

    fields = dict(base.NotificationPayloadBase.fields, **{
        'audit_uuid': fields.UUIDField(),
        'sequence': fields.IntegerField(),
        'action_type': fields.StringField(),
        'instance_uuid': fields.UUIDField(nullable=True),
        'source_host': fields.StringField(nullable=True),
        'dest_host': fields.StringField(nullable=True),
        'state': fields.StringField(),
    })


def audit_changed(context, row, previous):
    """Notify that audit ``row`` moved from state ``previous`` (None: it
    was created)."""
    base.state_changed(context, AuditPayload, 'audit', row, previous)


def action_changed(context, row, previous, audit_uuid):
    """Notify that action ``row`` of audit ``audit_uuid`` moved from state
    ``previous``."""
    base.state_changed(context, ActionPayload, 'action', row, previous,
                       audit_uuid=audit_uuid)
