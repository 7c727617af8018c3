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

"""/v1/cloud_usage (microversion 1.12): the cloud's memory now and over
time, for an operator's view of what memagg gives back.

Now is summed from the hosts' usages (GET /v1/host_usages); the history
from the stored WSS samples (memagg.db.cloud_usage), so it reaches back
as far as [wss] sample_retention_hours.
"""
import datetime
import math

from oslo_utils import timeutils

from memagg.api.controllers import base
from memagg.api.controllers import host_usages
from memagg.api.policies import cloud_usage as policy
from memagg.api import request_schemas
from memagg.api import schemas
from memagg.api import validation
from memagg.api import views
from memagg.common import exceptions
from memagg.db import cloud_usage as db_cloud_usage

_SINCE = (1, 12)
DEFAULT_RANGE = datetime.timedelta(days=1)
DEFAULT_POINTS = 60


def hosts_needed(capacities, used_mb):
    """How few of capacities (MiB each host offers) hold used_mb,
    filled largest first: a lower bound, as whole instances and CPU are
    left out. All of them when even all are too few."""
    needed = 0
    for capacity in sorted(capacities, reverse=True):
        if used_mb <= 0:
            break
        needed += 1
        used_mb -= capacity
    return needed


def _figures(booked, wss, capacities):
    needed = hosts_needed(capacities, wss)
    return dict(booked_mb=booked, wss_maxavg_mb=wss,
                freed_mb=max(booked - wss, 0), hosts_needed=needed,
                emptiable_hosts=len(capacities) - needed)


def _now(context):
    rows, _ = host_usages.usages(context)
    active = [r for r in rows if r['state'] == 'active']
    # Only active hosts are packed; every instance counts towards memory
    # freed (a standby host has none once a plan emptied it).
    needed = hosts_needed([r['memory_mb'] - r['reserved_mb'] for r in active],
                          sum(r['wss_maxavg_mb'] for r in active))
    booked = sum(r['booked_mb'] for r in rows)
    wss = sum(r['wss_maxavg_mb'] for r in rows)
    return dict(hosts=len(rows), active_hosts=len(active),
                memory_mb=sum(r['memory_mb'] for r in rows),
                booked_mb=booked, wss_maxavg_mb=wss,
                freed_mb=max(booked - wss, 0), hosts_needed=needed,
                emptiable_hosts=len(active) - needed,
                lent_mb=sum(r['lent_mb'] for r in rows))


def _history(context, since, until, points):
    step = max(1, math.ceil((until - since).total_seconds() / points))
    capacity = db_cloud_usage.host_capacities(context)
    buckets = {}
    for bucket, host, booked, wss in db_cloud_usage.usage_by_bucket(
            context, since, until, step):
        buckets.setdefault(bucket, []).append((host, booked, wss))
    history = []
    for bucket, hosts in sorted(buckets.items()):
        figures = _figures(sum(h[1] for h in hosts), sum(h[2] for h in hosts),
                           [capacity.get(h[0], 0) for h in hosts])
        history.append(views.render(
            'CloudPoint', None, base.version(), hosts=len(hosts),
            at=since + datetime.timedelta(seconds=bucket * step), **figures))
    return step, history


@base.route('/v1/cloud_usage', 'Show the cloud\'s memory now and over a '
            'time range: booked, kept in RAM, freed, and how many hosts '
            'could be emptied. Since 1.12.',
            schemas.item_response('cloud_usage', 'CloudUsage'),
            query=request_schemas.cloud_usage_query, min_version=_SINCE)
def get_cloud_usage(query):
    base.enforce(policy.GET)
    context = base.context()
    until = (validation.parse_datetime(query['until']) if 'until' in query
             else timeutils.utcnow().replace(microsecond=0))
    since = (validation.parse_datetime(query['since']) if 'since' in query
             else until - DEFAULT_RANGE)
    if since >= until:
        raise exceptions.InvalidParameter(
            field='until', reason='is not after since: give an until later '
                                  'than since')
    step, history = _history(context, since, until,
                             query.get('points', DEFAULT_POINTS))
    return {'cloud_usage': views.render(
        'CloudUsage', None, base.version(),
        now=views.render('CloudNow', None, base.version(), **_now(context)),
        since=since, until=until, step_s=step, history=history)}
