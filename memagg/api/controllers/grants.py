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

"""/v1/grants: remote memory lent to instances. The secret is never shown.

From microversion 1.3 memory can be asked for (POST /v1/grants) and given
back (DELETE /v1/grants/{uuid}): the API checks the request and calls
memagg-scheduler, which sets the grant up on the donors and the
instance's host, or releases it, before it answers.
"""
from memagg.api.controllers import base
from memagg.api.policies import grants as policy
from memagg.api import schemas
from memagg.api import views
from memagg.db import grants as db_grants
from memagg.db import instances as db_instances

_SINCE = (1, 3)


@base.route('/v1/grants', 'List remote-memory grants.',
            schemas.list_response('grants'), query=base.list_query('grants'))
def list_grants(query):
    base.enforce(policy.LIST)
    version = base.version()
    return base.paginate('grants', query, lambda row: views.render(
        'Grant', row, version))


@base.route('/v1/grants/{uuid}', 'Show a grant and its slabs.',
            schemas.item_response('grant', 'GrantDetail'),
            path_params={'uuid': schemas.UUID}, errors=(404,))
def get_grant(uuid, query):
    base.enforce(policy.GET)
    return {'grant': views.grant_detail(
        db_grants.grant_get(base.context(), uuid), base.version())}


@base.route('/v1/grants', 'Lend remote memory to an instance: donors set '
            'up slabs and the instance\'s host attaches them as its '
            'highest-priority swap. A partial grant says why it is less '
            'than asked; 409 when nothing can be granted, with the reason. '
            'Since 1.3.',
            schemas.item_response('grant', 'GrantDetail'), method='POST',
            body=schemas.GRANT_CREATE, status=201, errors=(404, 409),
            min_version=_SINCE)
def create_grant(query, body):
    base.enforce(policy.CREATE)
    ctxt = base.context()
    instance = db_instances.instance_get(ctxt, body['instance_uuid'])
    grant = base.call_scheduler(
        'allocate_remote', 'the grant request',
        instance_uuid=instance.uuid, consumer_host=instance.host,
        size_mb=body['size_mb'])
    return {'grant': views.grant_detail(db_grants.grant_get(
        ctxt, grant['uuid']), base.version())}


@base.route('/v1/grants/{uuid}', 'Release a grant: the instance\'s pages '
            'go to its host\'s local copy and the donors free the memory. '
            'Releasing a released grant changes nothing. Since 1.3.',
            schemas.item_response('grant', 'GrantDetail'), method='DELETE',
            path_params={'uuid': schemas.UUID}, status=202,
            errors=(404, 409), min_version=_SINCE)
def delete_grant(uuid, query):
    base.enforce(policy.DELETE)
    ctxt = base.context()
    db_grants.grant_get(ctxt, uuid)
    base.call_scheduler('release_grant', 'the release of grant %s' % uuid,
                        grant_uuid=uuid)
    return {'grant': views.grant_detail(db_grants.grant_get(ctxt, uuid),
                                        base.version())}
