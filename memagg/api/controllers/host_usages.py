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
scheduling request, so it is one body built from one query per table,
however many hosts there are. An instance's resident memory is counted as
consolidation rounds count it (memagg.scheduler.audits).

From 1.12 each host also shows what it lends, borrows and has free in the
reservoir, and the listing takes a page size, a marker, a sort and filters
(a dashboard's table of a thousand hosts). Sums per host need every
instance whatever the page, so the page is cut from the sorted hosts here,
not in SQL: a thousand hosts and ten thousand instances are one read.
"""
import collections
import datetime
import urllib.parse

import flask
from oslo_utils import timeutils

from memagg.api.controllers import base
from memagg.api.policies import host_usages as policy
from memagg.api import request_schemas
from memagg.api import schemas
from memagg.api import views
from memagg.common import exceptions
from memagg.db import hosts as db_hosts
from memagg.scheduler import audits

_SINCE = (1, 5)
PAGED_SINCE = (1, 12)


def usages(context):
    """Every host's usage as a dict of HostUsage's fields (all versions'),
    by name, and the MiB the reservoir could lend now."""
    hosts, instances, granted, held, lent = db_hosts.host_usages(context)
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
    rows = [dict(host=h.name, state=h.state, memory_mb=h.memory_mb,
                 reserved_mb=h.reserved_mb, wss_maxavg_mb=resident[h.name],
                 booked_mb=booked[h.name], instances=count[h.name],
                 remote_mb=granted.get(h.name, 0),
                 reported_at=h.reported_at, lent_mb=lent.get(h.name, 0),
                 borrowed_mb=granted.get(h.name, 0),
                 free_reservoir_mb=h.free_reservoir_mb) for h in hosts]
    return rows, lendable


def _page(rows, query):
    """The rows ``query`` (1.12) selects, sorted, after its marker, at most
    its limit; and whether more follow."""
    contains = query.get('host_contains', '').lower()
    rows = [r for r in rows if contains in r['host'].lower()
            and query.get('state', r['state']) == r['state']]
    key = query.get('sort_key', 'host')
    # The name breaks ties, so a marker names one place in the order.
    rows.sort(key=lambda r: (r[key], r['host']),
              reverse=query.get('sort_dir') == 'desc')
    if 'marker' in query:
        names = [r['host'] for r in rows]
        if query['marker'] not in names:
            raise exceptions.MarkerNotFound(query['marker'])
        rows = rows[names.index(query['marker']) + 1:]
    limit = query.get('limit')
    if limit is None or len(rows) <= limit:
        return rows, False
    return rows[:limit], True


@base.route('/v1/host_usages', 'List every host\'s memory and what its '
            'instances use, with what the reservoir could lend now. Since '
            '1.5; unpaginated unless a limit is given (since 1.12).',
            schemas.ref('HostUsages'), min_version=_SINCE,
            query=request_schemas.host_usages_query)
def list_host_usages(query):
    base.enforce(policy.LIST)
    version = base.version()
    if query and version < PAGED_SINCE:
        raise exceptions.InvalidParameter(
            field=sorted(query)[0], reason=(
                'the host usages take query parameters from microversion '
                '%s on; ask for it' % '.'.join(map(str, PAGED_SINCE))))
    rows, lendable = usages(base.context())
    rows, more = _page(rows, query)
    body = {'host_usages': [views.render('HostUsage', None, version, **row)
                            for row in rows],
            'reservoir_free_mb': lendable}
    if version >= PAGED_SINCE:
        body['links'] = []
        if more:
            args = dict(flask.request.args.items(), marker=rows[-1]['host'])
            body['links'].append({'rel': 'next', 'href': base.link(
                flask.request.path + '?' + urllib.parse.urlencode(args))})
    return body
