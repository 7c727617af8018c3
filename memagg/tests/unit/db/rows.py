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

"""Rows for DB tests, written straight to the database memagg.db uses."""
import datetime
import uuid

from oslo_utils import timeutils
import sqlalchemy as sa

from memagg.db import facade as db_facade
from memagg.db import secret_box
from memagg.db.sqlalchemy import models

#: Two VMs the tests store rows of.
VM_A = '11111111-1111-4111-8111-111111111111'
VM_B = '22222222-2222-4222-8222-222222222222'

_DEFAULTS = {
    models.Host: lambda n: dict(name='host-%d' % n),
    models.Instance: lambda n: dict(uuid=str(uuid.uuid4()), name='vm-%d' % n,
                                    host='host-1'),
    models.Service: lambda n: dict(host='host-%d' % n,
                                   binary='memagg-compute',
                                   topic='memagg-compute', report_count=1),
    models.WssSample: lambda n: dict(instance_uuid=str(uuid.UUID(int=n)),
                                     host='host-1',
                                     sampled_at=timeutils.utcnow(),
                                     wss_mb=100, current_mb=200,
                                     estimator='libvirt'),
    models.HostSample: lambda n: dict(host='host-1',
                                      sampled_at=timeutils.utcnow(),
                                      cpu_util=0.5, mem_used_mb=1024),
    models.Grant: lambda n: dict(uuid=str(uuid.uuid4()),
                                 instance_uuid=str(uuid.uuid4()),
                                 consumer_host='host-1', requested_mb=256,
                                 granted_mb=256, status='active',
                                 secret='s3cret'),
    models.Audit: lambda n: dict(uuid=str(uuid.uuid4())),
    models.AuditAction: lambda n: dict(sequence=n, action_type='migrate'),
    models.Slab: lambda n: dict(index=n, donor_host='host-2', size_mb=256),
    models.Migration: lambda n: dict(uuid=str(uuid.uuid4()),
                                     instance_uuid=str(uuid.uuid4()),
                                     source_host='host-1',
                                     dest_host='host-2'),
}


def insert(model, *rows):
    """Insert ``rows`` (dicts overriding plausible defaults); return their
    ids in order."""
    ids = []
    with db_facade.get_engine().begin() as connection:
        for n, row in enumerate(rows, 1):
            values = dict(_DEFAULTS[model](n), **row)
            if model is models.Grant:
                # ``secret`` is stored as memagg.db.grants stores it;
                # ``wrapped_secret`` as given (a clear legacy value, say).
                secret = secret_box.wrap(values.pop('secret'),
                                         values['uuid'])
                values.setdefault('wrapped_secret', secret)
            result = connection.execute(sa.insert(model).values(**values))
            ids.append(result.inserted_primary_key[0])
    return ids


def ago(**delta):
    """A whole-second UTC time this far in the past (MariaDB's DATETIME
    keeps no fraction)."""
    now = timeutils.utcnow().replace(microsecond=0)
    return now - datetime.timedelta(**delta)
