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

"""Compute hosts and VMs in the DB as memagg-compute reports them, for the
reservoir's tests."""
import datetime

from oslo_utils import timeutils

from memagg.db import grants as db_grants
from memagg.db import reports as db_reports

VM_1 = '10000000-0000-4000-8000-000000000001'
VM_2 = '10000000-0000-4000-8000-000000000002'
VM_3 = '10000000-0000-4000-8000-000000000003'


def host(ctxt, name, lendable_mb, vms=(), age_s=0, local_room_mb=None):
    """Host ``name`` lending ``lendable_mb``, reported ``age_s`` seconds
    ago, with ``vms`` [(uuid, booked_mb)] and ``local_room_mb`` for new
    grants' local copies (None: not known)."""
    at = timeutils.utcnow() - datetime.timedelta(seconds=age_s)
    db_reports.report_ingest(
        ctxt, dict(name=name, memory_mb=65536, vcpus=8,
                   free_reservoir_mb=lendable_mb + 1024,
                   lendable_mb=lendable_mb, local_room_mb=local_room_mb),
        [dict(uuid=uuid, name='vm-' + uuid[-1], booked_mb=booked,
              current_mb=booked) for uuid, booked in vms], [],
        reported_at=at)


def stored(ctxt, uuid):
    """Grant ``uuid`` as stored, and its slabs as (index, donor, status)."""
    grant = db_grants.grant_get(ctxt, uuid)
    return grant, [(s.index, s.donor_host, s.status) for s in grant.slabs]
