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
back (DELETE /v1/grants/{uuid}). From 1.10 a request answers at once: the
API reserves the slabs on donors in one transaction (409 when not a slab
can be) and casts the set-up to memagg-scheduler, which has the donors
prepare them and the instance's host attach the grant; before 1.10 the API
calls memagg-scheduler to do all of it before answering. A release answers
at once: the API moves the grant from active to releasing
in one compare-and-set, so that of concurrent DELETEs one only has the
release carried out, and casts it to memagg-scheduler, which asks the
hosts with bounded retries (memagg.scheduler.reservoir).
"""
from memagg.api.controllers import base
from memagg.api.policies import grants as policy
from memagg.api import request_schemas
from memagg.api import schemas
from memagg.api import views
from memagg.common import exceptions
from memagg.db import grants as db_grants
from memagg.db import instances as db_instances
from memagg.scheduler import grant_returns
from memagg.scheduler import reservoir

_SINCE = (1, 3)
_AT_ONCE = (1, 10)


def _reservoir():
    """The app's Reservoir, made on first use: it reserves slabs with the
    [reservoir] options and donor selection plug-in the scheduler uses."""
    return base.made_once('reservoir', reservoir.Reservoir)


@base.route('/v1/grants', 'List remote-memory grants.',
            schemas.list_response('grants'), query=base.list_query('grants'))
def list_grants(query):
    base.enforce(policy.LIST)
    version = base.version()
    return base.paginate('grants', query, lambda row: views.grant(
        row, version))


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
            'From 1.10 it answers 202 at once with the grant pending, its '
            'slabs reserved; it ends active, or failed with the reason. '
            '409 when memagg-scheduler runs in observe mode. Since 1.3.',
            schemas.item_response('grant', 'GrantDetail'), method='POST',
            body=request_schemas.GRANT_CREATE, status=201, errors=(404, 409),
            min_version=_SINCE, status_since=((_AT_ONCE, 202),))
def create_grant(query, body):
    base.enforce(policy.CREATE)
    ctxt = base.context()
    instance = db_instances.instance_get(ctxt, body['instance_uuid'])
    if base.version() < _AT_ONCE:
        grant = base.call_scheduler(
            'allocate_remote', 'the grant request',
            instance_uuid=instance.uuid, consumer_host=instance.host,
            size_mb=body['size_mb'])
        return {'grant': views.grant_detail(db_grants.grant_get(
            ctxt, grant['uuid']), base.version())}
    grant = _reservoir().reserve(ctxt, instance.uuid, instance.host,
                                 body['size_mb'])
    try:
        base.cast_scheduler('finish_allocation', 'the set-up of grant %s'
                            % grant.uuid, grant.uuid)
    except exceptions.ServiceUnavailable:
        # Nothing was asked of a host yet: the reservation goes.
        db_grants.grant_delete(ctxt, grant.uuid)
        raise
    return {'grant': views.grant_detail(grant, base.version())}


@base.route('/v1/grants/{uuid}', 'Release a grant: the instance\'s pages '
            'go to its host\'s local copy and the donors free the memory. '
            'Answers at once with the grant releasing; it ends released, or '
            'failed with the reason when a host did not answer. Releasing '
            'a grant being released, released or failed changes nothing '
            '(202 with its state); 409 while it is pending or its instance '
            'migrates. Since 1.3.',
            schemas.item_response('grant', 'GrantDetail'), method='DELETE',
            path_params={'uuid': schemas.UUID}, status=202,
            errors=(404, 409), min_version=_SINCE)
def delete_grant(uuid, query):
    base.enforce(policy.DELETE)
    ctxt = base.context()
    won, grant = grant_returns.begin_release(ctxt, uuid)
    if won:
        try:
            base.cast_scheduler('finish_release', 'the release of grant %s'
                                % uuid, uuid)
        except exceptions.ServiceUnavailable:
            db_grants.grant_compare_and_set(ctxt, uuid, 'releasing',
                                            'active')
            raise
    return {'grant': views.grant_detail(grant, base.version())}
