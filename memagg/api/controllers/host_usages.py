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

"""/v1/host_usages (microversion 1.5): every host's memory in one answer.

Nova's scheduler filter and weigher (memagg.nova) read it once per
scheduling request, so it is one unpaginated body built from one query per
table, however many hosts there are. An instance's resident memory is
counted as consolidation rounds count it (memagg.scheduler.audits).
"""
import collections
import datetime

from oslo_utils import timeutils

from memagg.api.controllers import base
from memagg.api.policies import host_usages as policy
from memagg.api import schemas
from memagg.api import views
from memagg.db import hosts as db_hosts
from memagg.scheduler import audits

_SINCE = (1, 5)


@base.route('/v1/host_usages', 'List every host\'s memory and what its '
            'instances use, unpaginated, with what the reservoir could lend '
            'now. Since 1.5.', schemas.ref('HostUsages'), min_version=_SINCE)
def list_host_usages(query):
    base.enforce(policy.LIST)
    hosts, instances, granted, held = db_hosts.host_usages(base.context())
    resident = collections.Counter()
    booked = collections.Counter()
    count = collections.Counter()
    for instance in instances:
        resident[instance.host] += audits.resident_mb(instance)
        booked[instance.host] += instance.booked_mb
        count[instance.host] += 1
    since = timeutils.utcnow() - datetime.timedelta(
        seconds=base.conf().service_down_time)
    # What the reservoir would lend now: as donors are chosen, only fresh
    # active hosts, each less the slabs it already holds.
    lendable = sum(max(0, h.lendable_mb - held.get(h.name, 0))
                   for h in hosts if h.state == 'active'
                   and h.reported_at is not None and h.reported_at >= since)
    version = base.version()
    return {'host_usages': [views.render(
        'HostUsage', h, version, host=h.name, wss_maxavg_mb=resident[h.name],
        booked_mb=booked[h.name], instances=count[h.name],
        remote_mb=granted.get(h.name, 0)) for h in hosts],
        'reservoir_free_mb': lendable}
