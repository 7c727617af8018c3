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

"""The API reference's examples (memagg/api/examples/, one file per
operation, put into the OpenAPI document by memagg.api.openapi) are real
calls: each is made here through the WSGI app, on the API tests' database
and a real scheduler manager on the fake RPC driver, and must give what
its file shows, times and the UUIDs of what it created set to fixed ones.
MEMAGG_WRITE_EXAMPLES=1 writes the files instead (then regenerate
api-ref/openapi.json)."""
import json
import os
import re

import pytest

from memagg.api import examples
from memagg.api import microversion
from memagg.api import openapi
from memagg.api.controllers import base
from memagg.conf import CONF
from memagg.db.sqlalchemy import models
from memagg.tests.unit.api import data
from memagg.tests.unit.db import rows

RECOMMENDED = '66666666-6666-4666-8666-666666666666'
FIXED_TIME = '2026-12-01T12:00:00+00:00'
_TIME = re.compile(r'^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d')
_UUID = re.compile(r'^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}'
                   r'-[0-9a-f]{12}$')
_KNOWN_UUIDS = {data.INSTANCE_A, data.INSTANCE_B, data.GRANT, data.AUDIT,
                data.MIGRATION, RECOMMENDED}

#: operation id: (method, path, request body) of its example.
CALLS = {
    'root_versions': ('GET', '/', None),
    'root_version_v1': ('GET', '/v1/', None),
    'audits_list_audits': ('GET', '/v1/audits', None),
    'audits_get_audit': ('GET', '/v1/audits/' + data.AUDIT, None),
    'audits_create_audit': ('POST', '/v1/audits',
                            {'memory_basis': 'wss', 'auto_execute': False}),
    'audits_execute_audit': ('POST', '/v1/audits/%s/execute' % RECOMMENDED,
                             {}),
    'cloud_usage_get_cloud_usage': (
        'GET', '/v1/cloud_usage?since=2024-05-01T12:00:00Z'
        '&until=2024-05-01T12:06:00Z&points=2', None),
    'grants_list_grants': ('GET', '/v1/grants', None),
    'grants_get_grant': ('GET', '/v1/grants/' + data.GRANT, None),
    'grants_create_grant': ('POST', '/v1/grants',
                            {'instance_uuid': data.INSTANCE_A,
                             'size_mb': 200}),
    'grants_delete_grant': ('DELETE', '/v1/grants/' + data.GRANT, None),
    'host_usages_list_host_usages': ('GET', '/v1/host_usages', None),
    'hosts_list_hosts': ('GET', '/v1/hosts', None),
    'hosts_get_host': ('GET', '/v1/hosts/host-1', None),
    'hosts_reclaim_host': ('POST', '/v1/hosts/host-2/reclaim',
                           {'size_mb': 100}),
    'instances_list_instances': ('GET', '/v1/instances', None),
    'instances_get_instance': ('GET', '/v1/instances/' + data.INSTANCE_A,
                               None),
    'instances_list_wss': ('GET', '/v1/instances/%s/wss?limit=2'
                           % data.INSTANCE_A, None),
    'migrations_list_migrations': ('GET', '/v1/migrations', None),
    'migrations_get_migration': ('GET', '/v1/migrations/' + data.MIGRATION,
                                 None),
    'migrations_create_migration': ('POST', '/v1/migrations',
                                    {'instance_uuid': data.INSTANCE_A,
                                     'dest_host': 'host-2'}),
    'reservoir_get_reservoir': ('GET', '/v1/reservoir', None),
    'services_list_services': ('GET', '/v1/services', None),
}


def _fixed(value, new_uuids):
    """``value`` with every date-time set to FIXED_TIME and every UUID
    this call created numbered in the order met."""
    if isinstance(value, dict):
        return {k: _fixed(v, new_uuids) for k, v in value.items()}
    if isinstance(value, list):
        return [_fixed(v, new_uuids) for v in value]
    if isinstance(value, str) and _TIME.match(value):
        return FIXED_TIME
    if (isinstance(value, str) and _UUID.match(value)
            and value not in _KNOWN_UUIDS):
        return new_uuids.setdefault(
            value, 'aaaaaaaa-aaaa-4aaa-8aaa-%012d' % (len(new_uuids) + 1))
    return value


def test_every_operation_has_its_example():
    operations = {r.operation_id for r in base.ROUTES}
    assert set(CALLS) == operations - examples.WITHOUT
    assert set(examples.load_all()) == set(CALLS)


def test_the_document_shows_them():
    document = openapi.build(CONF.api.max_limit)
    made = examples.load('grants_create_grant')
    operation = document['paths']['/v1/grants']['post']
    assert operation['requestBody']['content']['application/json'][
        'example'] == made['request']['body']
    assert operation['responses']['202']['content']['application/json'][
        'example'] == made['response']['body']
    # A GET has no body: its request is its line and headers.
    listed = document['paths']['/v1/hosts']['get']
    assert listed['x-memagg-example-request'] == {
        'method': 'GET', 'path': '/v1/hosts', 'headers': {
            microversion.HEADER: 'memory-aggregation %s'
            % microversion.to_string(microversion.MAX_VERSION)}}


@pytest.mark.parametrize('operation_id', sorted(CALLS))
def test_the_example_is_what_a_real_call_gives(operation_id, api, request):
    rows.insert(models.Audit, dict(uuid=RECOMMENDED, state='recommended'))
    method, path, body = CALLS[operation_id]
    if method != 'GET':
        # What a change casts or calls goes to it. Not for a GET: its
        # heartbeats and purges would change what the GET shows.
        request.getfixturevalue('scheduler')
    headers = {microversion.HEADER: 'memory-aggregation %s'
               % microversion.to_string(microversion.MAX_VERSION)}
    response = api.open(path, method=method, headers=headers, json=body)
    assert response.status_code < 300, response.get_data(as_text=True)
    new_uuids = {}
    made = {
        'request': {'method': method, 'path': path, 'headers': headers,
                    **({'body': body} if body is not None else {})},
        'response': {'status': response.status_code,
                     'body': _fixed(response.json, new_uuids)},
    }
    if os.environ.get('MEMAGG_WRITE_EXAMPLES') == '1':
        examples.write(operation_id, made)
    assert examples.load(operation_id) == made, (
        'memagg/api/examples/%s.json is not what the call gives: '
        'MEMAGG_WRITE_EXAMPLES=1 rewrites it (then regenerate '
        'api-ref/openapi.json)' % operation_id)
    assert json.dumps(made).count(data.GRANT_SECRET) == 0
