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

"""/v1/hosts: compute nodes as memagg-compute reports them."""
from memagg.api.controllers import base
from memagg.api.policies import hosts as policy
from memagg.api import request_schemas
from memagg.api import schemas
from memagg.api import views
from memagg.common import exceptions
from memagg.db import grants as db_grants
from memagg.db import hosts as db_hosts
from memagg.scheduler import grant_returns


@base.route('/v1/hosts', 'List compute hosts.', schemas.list_response('hosts'),
            query=base.list_query('hosts'))
def list_hosts(query):
    base.enforce(policy.LIST)
    return base.paginate('hosts', query, lambda row: views.render(
        'Host', row, base.version()))


@base.route('/v1/hosts/{name}', 'Show a compute host.',
            schemas.item_response('host', 'Host'),
            path_params={'name': schemas.HOST_NAME}, errors=(404,))
def get_host(name, query):
    base.enforce(policy.GET)
    row = db_hosts.host_get(base.context(), name)
    return {'host': views.render('Host', row, base.version())}


@base.route('/v1/hosts/{name}/reclaim', 'Take back memory the host lends: '
            'whole slabs, from the instances most over their L1 share '
            'first (l1_share_mb), of one instance its newest grants first; '
            'their instances\' pages go to their hosts\' local copies '
            'first. Answers at once with '
            'what the reclaim took (reclaiming); memagg-scheduler carries '
            'it out. A slab is taken by one reclaim only. Since 1.3.',
            schemas.ref('Reclaimed'), method='POST',
            path_params={'name': schemas.HOST_NAME},
            body=request_schemas.RECLAIM, errors=(404,), min_version=(1, 3))
def reclaim_host(name, query, body):
    base.enforce(policy.RECLAIM)
    ctxt = base.context()
    taken, taken_mb = grant_returns.begin_reclaim(ctxt, name, body['size_mb'])
    if taken:
        try:
            base.cast_scheduler('finish_reclaim', 'the reclaim of memory '
                                'lent by %s' % name, name, taken)
        except exceptions.ServiceUnavailable:
            for grant_uuid, indexes in taken.items():
                db_grants.grant_slabs_reclaim_failed(ctxt, grant_uuid,
                                                     indexes)
            raise
    return views.render('Reclaimed', None, base.version(),
                        reclaimed_mb=taken_mb, slabs=[
                            dict(grant_uuid=grant_uuid, index=index)
                            for grant_uuid, indexes in taken.items()
                            for index in indexes])
