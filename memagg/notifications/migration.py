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

"""Notifications of migrations' state changes (memagg.migration.update)."""
from oslo_versionedobjects import fields

from memagg.notifications import base
from memagg.objects import base as objects_base


@objects_base.MemaggObjectRegistry.register
class MigrationPayload(base.NotificationPayloadBase):
    """A live migration's state change."""

    # Version 1.0: first version
    VERSION = '1.0'

    STATE_COLUMN = 'status'

    fields = dict(base.NotificationPayloadBase.fields, **{
        'uuid': fields.UUIDField(),
        'instance_uuid': fields.UUIDField(),
        'source_host': fields.StringField(),
        'dest_host': fields.StringField(),
        'status': fields.StringField(),
        'attempts': fields.IntegerField(),
        'bytes_transferred': fields.IntegerField(nullable=True),
        'duration_s': fields.FloatField(nullable=True),
        'error': fields.StringField(nullable=True),
    })


def migration_changed(context, row, previous):
    """Notify that migration ``row`` moved from status ``previous`` (None:
    it was queued)."""
    base.state_changed(context, MigrationPayload, 'migration', row,
                       previous)
