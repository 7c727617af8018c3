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

"""What the panels ask memagg, through memagg's Python client.

``client(request)`` is the one place a client is made: with the token the
user logged into Horizon with and memagg's endpoint from that token's
catalog, as Horizon's own API modules do, so memagg's API applies its
policies to the user and not to Horizon. The other functions turn the
API's answers into what the pages show.
"""
from django.conf import settings
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint
from openstack_dashboard.api import base

from memaggclient import client as memagg_client
from memaggclient import http

SERVICE_TYPE = http.SERVICE_TYPE
# How many of an instance's samples its chart shows: an hour at
# memagg-compute's default 10 s interval.
HISTORY_SAMPLES = 360


def client(request):
    """A memagg Client acting as the user of ``request``."""
    endpoint = base.url_for(request, SERVICE_TYPE)
    verify = (getattr(settings, 'OPENSTACK_SSL_CACERT', None) or
              not getattr(settings, 'OPENSTACK_SSL_NO_VERIFY', False))
    session = ks_session.Session(
        auth=token_endpoint.Token(endpoint, request.user.token.id),
        verify=verify)
    return memagg_client.Client(session, endpoint_override=endpoint)


def host_rows(host_usages, reservoir):
    """One dict per host, by name: its usage (GET /v1/host_usages) with
    what it lends, borrows and has free in the reservoir (GET
    /v1/reservoir)."""
    lending = {h['host']: h for h in reservoir['hosts']}
    rows = []
    for usage in sorted(host_usages['host_usages'],
                        key=lambda u: u['host']):
        pool = lending.get(usage['host'], {})
        rows.append(dict(
            usage,
            lent_mb=pool.get('lent_mb', 0),
            borrowed_mb=pool.get('borrowed_mb', 0),
            free_reservoir_mb=pool.get('free_reservoir_mb', 0)))
    return rows


def hosts_needed(rows):
    """How few active hosts could hold every instance's WSS^maxavg, filled
    largest first: a lower bound (it ignores CPU and instances' sizes);
    a consolidation audit makes the real plan."""
    active = [r for r in rows if r['state'] == 'active']
    left = sum(r['wss_maxavg_mb'] for r in active)
    needed = 0
    for row in sorted(active, key=lambda r: r['memory_mb'] - r['reserved_mb'],
                      reverse=True):
        if left <= 0:
            break
        needed += 1
        left -= row['memory_mb'] - row['reserved_mb']
    return needed


def summary(rows):
    """The cloud-wide figures: memory booked but not used (freed by
    ballooning to WSS^maxavg), and how many active hosts could be
    emptied if instances were packed by WSS^maxavg."""
    active = [r for r in rows if r['state'] == 'active']
    booked = sum(r['booked_mb'] for r in rows)
    wss = sum(r['wss_maxavg_mb'] for r in rows)
    return {
        'hosts': len(rows),
        'active_hosts': len(active),
        'memory_mb': sum(r['memory_mb'] for r in rows),
        'booked_mb': booked,
        'wss_maxavg_mb': wss,
        'freed_mb': max(booked - wss, 0),
        'emptiable_hosts': len(active) - hosts_needed(rows),
        'lent_mb': sum(r['lent_mb'] for r in rows),
    }


def with_donors(memagg, grants):
    """``grants`` (items of GET /v1/grants), each read again with its
    slabs, and the sorted names of the hosts that lend them under
    ``donors``."""
    details = []
    for grant in grants:
        detail = memagg.grants.get(grant['uuid'])
        detail['donors'] = sorted({s['donor_host'] for s in detail['slabs']})
        details.append(detail)
    return details


def instance_history(memagg, uuid):
    """The instance ``uuid`` and its latest HISTORY_SAMPLES working-set
    samples, oldest first."""
    newest_first = memagg.instances.wss(uuid, sort_key='sampled_at',
                                        sort_dir='desc',
                                        limit=HISTORY_SAMPLES).items
    return memagg.instances.get(uuid), newest_first[::-1]
