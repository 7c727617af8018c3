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
# The most samples an instance's chart reads: the API's largest page
# ([api] max_limit's default), over five hours at memagg-compute's default
# 10 s interval; a longer range shows its newest samples.
HISTORY_SAMPLES = 1000


def client(request):
    """A memagg Client acting as the user of ``request``; one per request,
    so a page's calls share its microversion negotiation."""
    made = getattr(request, '_memagg_client', None)
    if made is not None:
        return made
    endpoint = base.url_for(request, SERVICE_TYPE)
    verify = (getattr(settings, 'OPENSTACK_SSL_CACERT', None) or
              not getattr(settings, 'OPENSTACK_SSL_NO_VERIFY', False))
    session = ks_session.Session(
        auth=token_endpoint.Token(endpoint, request.user.token.id),
        verify=verify)
    request._memagg_client = memagg_client.Client(
        session, endpoint_override=endpoint)
    return request._memagg_client


def host_page(memagg, limit, sort, marker=None, prev_marker=None,
              **filters):
    """One page of host usages (GET /v1/host_usages) in the ``sort``
    (key, direction) order: those after ``marker``, or the ones before
    ``prev_marker`` (read in the reverse order, then turned round).
    Returns the rows and whether pages come before and after."""
    key, direction = sort
    if prev_marker is None:
        page = memagg.host_usages.page(limit=limit, marker=marker,
                                       sort_key=key, sort_dir=direction,
                                       **filters)
        return page.items, marker is not None, page.next_marker is not None
    page = memagg.host_usages.page(
        limit=limit, marker=prev_marker, sort_key=key,
        sort_dir='asc' if direction == 'desc' else 'desc', **filters)
    return page.items[::-1], page.next_marker is not None, True


def instance_names(memagg, hosts):
    """The names of the instances on ``hosts`` (host names), by uuid: one
    listing per host rather than a GET per instance, as an audit or the
    grants name a few hosts and many instances."""
    names = {}
    for host in sorted(set(hosts) - {None}):
        for instance in memagg.instances.list(host=host).all_items():
            names[instance['uuid']] = instance['name']
    return names


def with_donors(memagg, grants):
    """``grants`` (items of GET /v1/grants), each read again with its
    slabs, and the sorted names of the hosts that hold them now (L1) under
    ``donors``."""
    details = []
    for grant in grants:
        detail = memagg.grants.get(grant['uuid'])
        detail['donors'] = sorted({s['donor_host'] for s in detail['slabs']
                                   if s.get('tier', 'l1') == 'l1'})
        details.append(detail)
    return details


def instance_history(memagg, uuid, since):
    """The instance ``uuid``, its latest HISTORY_SAMPLES working-set
    samples since ``since`` (a datetime), oldest first, and whether older
    ones in that range were left out."""
    page = memagg.instances.wss(uuid, since=since, sort_key='sampled_at',
                                sort_dir='desc', limit=HISTORY_SAMPLES)
    return (memagg.instances.get(uuid), page.items[::-1],
            page.next_marker is not None)


def instance_grants(memagg, uuid):
    """Every grant that lent memory to the instance ``uuid``."""
    return list(memagg.grants.list(instance_uuid=uuid).all_items())
