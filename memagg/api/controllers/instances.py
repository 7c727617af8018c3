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

"""/v1/instances: VMs, their memory sizes and their WSS history.

An instance's project may read it; only an admin sees every project's,
and which host runs an instance (memagg:instance:host).
"""
from memagg.api.controllers import base
from memagg.api.policies import instances as policy
from memagg.api import schemas
from memagg.api import views
from memagg.common import exceptions
from memagg.db import instances as db_instances


@base.route('/v1/instances', 'List instances (a non-admin sees its own '
            'project\'s only).', schemas.list_response('instances'),
            query=base.list_query('instances'))
def list_instances(query):
    base.enforce(policy.LIST)
    context = base.context()
    filters = {}
    if not _may(policy.LIST_ALL_PROJECTS):
        wanted = query.get('project_id', context.project_id)
        if wanted != context.project_id:
            raise exceptions.Forbidden(action=policy.LIST_ALL_PROJECTS)
        filters['project_id'] = context.project_id
    shows_host = _may(policy.HOST)
    if 'host' in query and not shows_host:
        raise exceptions.Forbidden(action=policy.HOST)
    version = base.version()
    return base.paginate('instances', query, lambda row: _render(
        'Instance', row, version, shows_host), filters=filters)


def _may(action):
    try:
        base.enforce(action)
    except exceptions.Forbidden:
        return False
    return True


def _render(component, row, version, shows_host):
    body = views.render(component, row, version)
    if not shows_host:
        del body['host']
    return body


def _owned_instance(uuid, action):
    """The instance, when the policy lets the caller see it; another
    project's is not found (as Nova answers), exactly as a missing one, when
    the caller could see one of its own project's."""
    context = base.context()
    instance = db_instances.instance_get(context, uuid)
    try:
        base.enforce(action, {'project_id': instance.project_id})
    except exceptions.Forbidden:
        base.enforce(action, {'project_id': context.project_id})
        raise exceptions.NotFound(resource='Instance', id=uuid)
    return instance


@base.route('/v1/instances/{uuid}', 'Show an instance.',
            schemas.item_response('instance', 'Instance'),
            path_params={'uuid': schemas.UUID}, errors=(404,))
def get_instance(uuid, query):
    instance = _owned_instance(uuid, policy.GET)
    return {'instance': _render('Instance', instance, base.version(),
                                _may(policy.HOST))}


@base.route('/v1/instances/{uuid}/wss', 'List an instance\'s working-set '
            'samples, oldest first, optionally in a time range.',
            schemas.list_response('wss_samples'),
            query=base.list_query('wss_samples'),
            path_params={'uuid': schemas.UUID}, errors=(404,))
def list_wss(uuid, query):
    _owned_instance(uuid, policy.WSS)
    version = base.version()
    shows_host = _may(policy.HOST)
    return base.paginate('wss_samples', query, lambda row: _render(
        'WssSample', row, version, shows_host),
        filters={'instance_uuid': uuid})
