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

"""The OpenAPI document: valid 3.1, complete, and the repo copy is fresh."""
import json
import pathlib

from openapi_spec_validator import validate as validate_spec

from memagg.api import app as api_app
from memagg.api.controllers import base
from memagg.api import microversion
from memagg.api import openapi
from memagg.api import schemas
from memagg.conf import CONF
from memagg.tests.unit.api import conftest

REPO_COPY = pathlib.Path(__file__).resolve().parents[4] / 'api-ref' / \
    'openapi.json'


def test_repo_copy_is_current():
    fresh = openapi.dumps(openapi.build(CONF.api.max_limit))
    assert REPO_COPY.read_text() == fresh, (
        'api-ref/openapi.json is stale: regenerate it with '
        '"python -m memagg.cmd.openapi > api-ref/openapi.json"')


def test_document_is_valid_openapi_3_1():
    document = openapi.build(CONF.api.max_limit)
    assert document['openapi'] == '3.1.0'
    validate_spec(document)


def test_every_route_is_documented_with_its_parameters():
    document = openapi.build(CONF.api.max_limit)
    assert set(document['paths']) == {r.path for r in base.ROUTES}
    operation = document['paths']['/v1/instances']['get']
    names = {p['name'] for p in operation['parameters']}
    assert {'limit', 'marker', 'sort_key', 'sort_dir', 'host',
            'OpenStack-API-Version'} <= names
    limit = next(p for p in operation['parameters'] if p['name'] == 'limit')
    assert limit['schema']['maximum'] == CONF.api.max_limit
    assert '503' in operation['responses']
    assert 'Retry-After' in operation['responses']['503']['headers']


def _undescribed(schema, where):
    """Properties of ``schema`` (and of the objects it and its arrays
    hold) without a description, as dotted paths."""
    found = []
    for name, prop in schema.get('properties', {}).items():
        path = '%s.%s' % (where, name)
        if 'description' not in prop and '$ref' not in prop:
            found.append(path)
        for inner in (prop, prop.get('items', {})):
            found += _undescribed(inner, path)
    return found


def test_every_field_of_every_schema_says_what_it_is():
    document = openapi.build(CONF.api.max_limit)
    missing = [path for name, schema in
               document['components']['schemas'].items()
               for path in _undescribed(schema, name)]
    assert missing == []
    instance = document['components']['schemas']['Instance']['properties']
    assert instance['wss_mb']['description'].startswith(
        'The working-set estimate, MiB')
    # A constant shared by many fields keeps none of their descriptions.
    assert 'description' not in schemas.INTEGER


def test_every_parameter_of_every_operation_says_what_it_is():
    document = openapi.build(CONF.api.max_limit)
    missing = ['%s %s %s' % (method.upper(), path, param['name'])
               for path, item in document['paths'].items()
               for method, operation in item.items()
               for param in operation.get('parameters', [])
               if not (param.get('description')
                       or param['schema'].get('description'))]
    assert missing == []
    hosts = document['paths']['/v1/hosts']['get']['parameters']
    sort_key = next(p for p in hosts if p['name'] == 'sort_key')
    assert sort_key['schema']['description'].startswith(
        'The field to sort by; default name.')


def test_each_operation_says_the_microversion_it_needs(api):
    """The document's minimum microversion of every operation is the one
    that serves it: a list served at it, refused (404, or 405 where the
    path has other methods) just below, as the document lists."""
    document = openapi.build(CONF.api.max_limit)
    for route in base.ROUTES:
        operation = document['paths'][route.path][route.method.lower()]
        since = operation['x-memagg-min-microversion']
        assert since == microversion.to_string(route.min_version), route
        if route.method != 'GET' or route.path_params or route.public:
            continue
        header = 'memory-aggregation %s' % since
        resp = api.get(route.path, headers={microversion.HEADER: header})
        assert resp.status_code == route.status_at(route.min_version), (
            route.path, resp.get_json())
        if route.min_version == microversion.MIN_VERSION:
            continue
        below = (route.min_version[0], route.min_version[1] - 1)
        resp = api.get(route.path, headers={
            microversion.HEADER: 'memory-aggregation %s'
            % microversion.to_string(below)})
        assert str(resp.status_code) in operation['responses'], route.path
        assert resp.status_code in (404, 405), route.path


def test_served_document_follows_deployment(api, conf):
    conf.config(max_limit=250, group='api')
    client = conftest.Client(api_app.create_app(CONF))
    served = client.get('/v1/openapi.json').json
    assert client.get('/v1/hosts?limit=251').status_code == 400
    params = served['paths']['/v1/hosts']['get']['parameters']
    limit = next(p for p in params if p['name'] == 'limit')
    assert limit['schema']['maximum'] == 250
    assert served['components']['schemas'] == json.loads(json.dumps(
        schemas.COMPONENTS))
