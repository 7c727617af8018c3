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

"""Notifications of grants' state changes (memagg.grant.update)."""
from oslo_versionedobjects import fields

from memagg.notifications import base
from memagg.objects import base as objects_base


@objects_base.MemaggObjectRegistry.register
class GrantPayload(base.NotificationPayloadBase):
    """A grant's state change (never its slabs' secret)."""

    # Version 1.0: first version
    VERSION = '1.0'

    STATE_COLUMN = 'status'

    fields = dict(base.NotificationPayloadBase.fields, **{
        'uuid': fields.UUIDField(),
        'instance_uuid': fields.UUIDField(),
        'consumer_host': fields.StringField(),
        'status': fields.StringField(),
        'requested_mb': fields.IntegerField(),
        'granted_mb': fields.IntegerField(),
        'partial': fields.BooleanField(),
        'reason': fields.StringField(nullable=True),
    })


def grant_changed(context, row, previous):
    """Notify that grant ``row`` moved from status ``previous`` (None: it
    was reserved)."""
    base.state_changed(context, GrantPayload, 'grant', row, previous)
