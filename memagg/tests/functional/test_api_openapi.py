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

"""The running API matches its OpenAPI document.

memagg-api's HTTP server runs on a loopback port over a migrated database
holding every kind of row; every route is called (successes and errors) and
each status and body is checked against the document in api-ref/. Casts to
memagg-scheduler go over oslo.messaging's in-process fake driver.
"""
import json
import pathlib

import jsonschema
import pytest
import referencing
import referencing.jsonschema
import requests

from memagg.api import app as api_app
from memagg.api.controllers import base
from memagg.api import microversion
from memagg.conf import CONF
from memagg.db.sqlalchemy import models
from memagg.tests.rpc_fixtures import fake_rpc  # noqa: F401
from memagg.tests.unit.api import data
from memagg.tests.unit.api import live
from memagg.tests.unit.db import rows

pytestmark = pytest.mark.functional

DOCUMENT = json.loads((pathlib.Path(__file__).resolve().parents[3] /
                       'api-ref' / 'openapi.json').read_text())
_URI = 'urn:memagg:openapi'
_REGISTRY = referencing.Registry().with_resource(
    _URI, referencing.jsonschema.DRAFT202012.create_resource(DOCUMENT))

LATEST = {microversion.HEADER: 'memory-aggregation latest'}
V1_1 = {microversion.HEADER: 'memory-aggregation 1.1'}
MEMBER_A = {'X-Project-Id': data.PROJECT_A, 'X-Roles': 'member'}
RECOMMENDED = '66666666-6666-4666-8666-666666666666'
_MOVE_A = {'instance_uuid': data.INSTANCE_A, 'dest_host': 'host-2'}

# (path template, concrete URL, headers, expected status)
CALLS = [
    ('/', '/', {}, 200),
    ('/v1/', '/v1/', {}, 200),
    ('/v1/openapi.json', '/v1/openapi.json', {}, 200),
    ('/v1/services', '/v1/services', {}, 200),
    ('/v1/services', '/v1/services?disabled=false&sort_key=host', {}, 200),
    ('/v1/services', '/v1/services?disabled=sometimes', {}, 400),
    ('/v1/hosts', '/v1/hosts?limit=1', {}, 200),
    ('/v1/hosts', '/v1/hosts', MEMBER_A, 403),
    ('/v1/hosts/{name}', '/v1/hosts/host-1', LATEST, 200),
    ('/v1/hosts/{name}', '/v1/hosts/nowhere', {}, 404),
    ('/v1/instances', '/v1/instances', {}, 200),
    ('/v1/instances', '/v1/instances', LATEST, 200),
    ('/v1/instances', '/v1/instances', MEMBER_A, 200),
    ('/v1/instances', '/v1/instances?limit=0', {}, 400),
    ('/v1/instances', '/v1/instances', {
        microversion.HEADER: 'memory-aggregation 1.99'}, 406),
    ('/v1/instances/{uuid}', '/v1/instances/' + data.INSTANCE_A, LATEST,
     200),
    ('/v1/instances/{uuid}', '/v1/instances/' + data.INSTANCE_B, MEMBER_A,
     404),
    ('/v1/instances/{uuid}/wss', '/v1/instances/%s/wss' % data.INSTANCE_B,
     MEMBER_A, 404),
    ('/v1/instances', '/v1/instances?host=host-1', MEMBER_A, 403),
    ('/v1/instances/{uuid}', '/v1/instances/' + data.MISSING, {}, 404),
    ('/v1/instances/{uuid}', '/v1/instances/bad-uuid', {}, 400),
    ('/v1/instances/{uuid}/wss', '/v1/instances/%s/wss?since='
     '2024-05-01T12:02:00Z&limit=2' % data.INSTANCE_A, MEMBER_A, 200),
    ('/v1/instances/{uuid}/wss', '/v1/instances/%s/wss?since=x'
     % data.INSTANCE_A, {}, 400),
    ('/v1/reservoir', '/v1/reservoir', {}, 200),
    ('/v1/grants', '/v1/grants?status=active', {}, 200),
    ('/v1/grants/{uuid}', '/v1/grants/' + data.GRANT, {}, 200),
    ('/v1/grants/{uuid}', '/v1/grants/' + data.MISSING, {}, 404),
    ('/v1/audits', '/v1/audits?sort_key=finished_at&sort_dir=desc', {}, 200),
    ('/v1/audits/{uuid}', '/v1/audits/' + data.AUDIT, {}, 200),
    ('/v1/migrations', '/v1/migrations?since=2000-01-01T00:00:00Z', {}, 200),
    ('/v1/migrations/{uuid}', '/v1/migrations/' + data.MIGRATION, {}, 200),
    ('/v1/migrations/{uuid}', '/v1/migrations/' + data.MIGRATION, MEMBER_A,
     403),
    ('/v1/host_usages', '/v1/host_usages', LATEST, 200),
    ('/v1/host_usages', '/v1/host_usages', dict(MEMBER_A, **LATEST), 403),
    ('/v1/host_usages', '/v1/host_usages?limit=1&sort_key=booked_mb'
     '&sort_dir=desc', LATEST, 200),
    ('/v1/host_usages', '/v1/host_usages?sort_key=cpu', LATEST, 400),
    ('/v1/cloud_usage', '/v1/cloud_usage?points=2', LATEST, 200),
    ('/v1/cloud_usage', '/v1/cloud_usage?points=0', LATEST, 400),
    ('/v1/cloud_usage', '/v1/cloud_usage', dict(MEMBER_A, **LATEST), 403),
]

_EXECUTE = '/v1/audits/{uuid}/execute'

# (path template, concrete URL, headers, JSON body, expected status)
POSTS = [
    ('/v1/audits', '/v1/audits', LATEST, {}, 202),
    ('/v1/audits', '/v1/audits', LATEST, {
        'memory_basis': 'booked', 'auto_execute': True,
        'parameters': {'overload_cpu': 'threshold',
                       'overload_cpu_params': {'threshold': 0.8}}}, 202),
    ('/v1/audits', '/v1/audits', LATEST,
     {'parameters': {'overload_cpu': 'nosuch'}}, 400),
    ('/v1/audits', '/v1/audits', dict(LATEST, **MEMBER_A), {}, 403),
    ('/v1/audits', '/v1/audits', V1_1, {}, 405),
    (_EXECUTE, '/v1/audits/%s/execute' % RECOMMENDED, LATEST, {}, 202),
    (_EXECUTE, '/v1/audits/%s/execute' % data.AUDIT, LATEST, {}, 409),
    (_EXECUTE, '/v1/audits/%s/execute' % data.MISSING, LATEST, {}, 404),
    (_EXECUTE, '/v1/audits/%s/execute' % RECOMMENDED, V1_1, {}, 404),
    (_EXECUTE, '/v1/audits/%s/execute' % RECOMMENDED, LATEST,
     {'force': True}, 400),
    # Grants and reclaim: the answers the API gives without memagg-scheduler
    # (a granting scheduler is exercised in test_reservoir_rabbit.py).
    ('/v1/grants', '/v1/grants', LATEST,
     {'instance_uuid': data.INSTANCE_A}, 400),
    ('/v1/grants', '/v1/grants', LATEST,
     {'instance_uuid': data.MISSING, 'size_mb': 64}, 404),
    ('/v1/grants', '/v1/grants', dict(LATEST, **MEMBER_A),
     {'instance_uuid': data.INSTANCE_A, 'size_mb': 64}, 403),
    ('/v1/hosts/{name}/reclaim', '/v1/hosts/host-1/reclaim', LATEST,
     {'size_mb': -1}, 400),
    ('/v1/hosts/{name}/reclaim', '/v1/hosts/nowhere/reclaim', LATEST,
     {'size_mb': 64}, 404),
    # A migration asked for, then the same one again while it is queued.
    ('/v1/migrations', '/v1/migrations', LATEST, _MOVE_A, 202),
    ('/v1/migrations', '/v1/migrations', LATEST, _MOVE_A, 409),
    ('/v1/migrations', '/v1/migrations', LATEST,
     dict(_MOVE_A, dest_host='host-1'), 400),
    ('/v1/migrations', '/v1/migrations', LATEST,
     dict(_MOVE_A, dest_host='nowhere'), 404),
    ('/v1/migrations', '/v1/migrations', dict(LATEST, **MEMBER_A), _MOVE_A,
     403),
    ('/v1/migrations', '/v1/migrations', V1_1, _MOVE_A, 405),
]

# (path template, concrete URL, headers, expected status)
DELETES = [
    ('/v1/grants/{uuid}', '/v1/grants/' + data.MISSING, LATEST, 404),
    ('/v1/grants/{uuid}', '/v1/grants/' + data.GRANT,
     dict(LATEST, **MEMBER_A), 403),
]


def _check(template, response, method='get'):
    operation = DOCUMENT['paths'][template][method]
    documented = operation['responses']
    assert str(response.status_code) in documented, (
        '%s returned undocumented status %s' % (template,
                                                response.status_code))
    spec = documented[str(response.status_code)]
    schema = spec['content']['application/json']['schema']
    if '$ref' in schema:
        schema = {'$ref': _URI + schema['$ref']}
    else:
        schema = json.loads(json.dumps(schema).replace(
            '"#/components', '"%s#/components' % _URI))
    jsonschema.Draft202012Validator(
        schema, registry=_REGISTRY,
        format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER,
    ).validate(response.json())
    for header in spec.get('headers', {}):
        if header != 'Vary':
            assert header in response.headers, (template, header)


@pytest.fixture
def api_url(conf, sqlite_db, fake_rpc):  # noqa: F811
    conf.config(auth_strategy='noauth', group='api')
    data.load()
    rows.insert(models.Audit, dict(uuid=RECOMMENDED, state='recommended'))
    with live.serving(api_app.create_app(CONF)) as url:
        yield url


def test_every_route_matches_the_document(api_url):
    exercised = ({('GET', c[0]) for c in CALLS}
                 | {('POST', c[0]) for c in POSTS}
                 | {('DELETE', c[0]) for c in DELETES})
    assert exercised == {(r.method, r.path) for r in base.ROUTES}, (
        'a route is not exercised here')
    with requests.Session() as session:
        for template, url, headers, status in CALLS:
            response = session.get(api_url + url, headers=headers,
                                   timeout=30)
            assert response.status_code == status, (url, response.text)
            assert response.headers['Content-Type'] == 'application/json'
            _check(template, response)
        for template, url, headers, body, status in POSTS:
            response = session.post(api_url + url, headers=headers,
                                    json=body, timeout=30)
            assert response.status_code == status, (url, response.text)
            assert response.headers['Content-Type'] == 'application/json'
            _check(template, response, 'post')
        for template, url, headers, status in DELETES:
            response = session.delete(api_url + url, headers=headers,
                                      timeout=30)
            assert response.status_code == status, (url, response.text)
            assert response.headers['Content-Type'] == 'application/json'
            _check(template, response, 'delete')


def test_served_document_is_the_repo_copy(api_url):
    served = requests.get(api_url + '/v1/openapi.json', timeout=30).json()
    assert served == DOCUMENT


def test_unknown_route_and_method_are_json(api_url):
    missing = requests.get(api_url + '/v1/flavors', timeout=30)
    assert missing.status_code == 404
    jsonschema.validate(missing.json(), DOCUMENT['components']['schemas'][
        'Error'])
    wrong = requests.delete(api_url + '/v1/hosts/host-1', timeout=30)
    assert wrong.status_code == 405
    assert wrong.headers['Allow'] == 'GET, HEAD, OPTIONS'
    assert wrong.json()['errors'][0]['status'] == 405
