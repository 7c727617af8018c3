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

"""Build the API's OpenAPI 3.1 document from the route registry.

The document is made from the same schemas that validate requests and build
responses, and covers the routes registered when it is built (all of them
once memagg.api.controllers is imported). api-ref/openapi.json holds it for
the default configuration; tools/generate-samples.sh regenerates it (a test
fails when the copy is stale).
"""
import http
import json

from memagg.api.controllers import base
from memagg.api import examples
from memagg.api import microversion
from memagg.api import schemas
from memagg.api import validation

_VERSION_PARAMETER = {
    'name': microversion.HEADER, 'in': 'header', 'required': False,
    'description': "'%s X.Y' or '%s latest'; without it the minimum version "
                   '(%s) is used. Versions: %s.' % (
                       microversion.SERVICE_TYPE, microversion.SERVICE_TYPE,
                       microversion.to_string(microversion.MIN_VERSION),
                       '; '.join('%s: %s' % (microversion.to_string(v), d)
                                 for v, d in
                                 sorted(microversion.VERSIONS.items()))),
    'schema': {'type': 'string'},
}

_VERSION_HEADERS = {
    microversion.HEADER: {
        'description': 'The microversion that served the request.',
        'schema': {'type': 'string'}},
    'Vary': {'schema': {'type': 'string'}},
}


def _error_response(status):
    response = {
        'description': http.HTTPStatus(status).phrase,
        'content': {'application/json': {'schema': schemas.ref('Error')}},
    }
    if status == 503:
        response['headers'] = {'Retry-After': {
            'description': 'Seconds to wait before retrying.',
            'schema': {'type': 'integer'}}}
    return response


def _operation(route, max_limit):
    parameters = [dict(name=name, required=True, schema=schema,
                       **{'in': 'path'})
                  for name, schema in route.path_params.items()]
    for name, schema in route.query_schema(max_limit)['properties'].items():
        parameters.append({'name': name, 'in': 'query', 'required': False,
                           'schema': schema})
    parameters.append(_VERSION_PARAMETER)
    responses = {}
    # A success status a later microversion replaced says when.
    successes = [(route.status, ', before %s' % microversion.to_string(
        route.status_since[0][0]) if route.status_since else '')]
    successes += [(status, ', since %s' % microversion.to_string(since))
                  for since, status in route.status_since]
    for status, when in successes:
        responses[str(status)] = {
            'description': http.HTTPStatus(status).phrase + when,
            'headers': _VERSION_HEADERS,
            'content': {'application/json': {'schema': route.response}},
        }
    statuses = set(route.errors) | {400, 406, 500}
    if route.body is not None:
        statuses |= {413, 415}
    if not route.public:
        statuses |= set(base.COMMON_ERRORS)
    if route.min_version > microversion.MIN_VERSION:
        # Asked for below the version it appeared in.
        statuses.add(405 if base.methods_at(route.path,
                                            microversion.MIN_VERSION)
                     else 404)
    for status in sorted(statuses):
        responses[str(status)] = _error_response(status)
    since = microversion.to_string(route.min_version)
    operation = {
        'operationId': route.operation_id,
        'summary': route.summary,
        'description': 'Needs microversion %s or later.' % since,
        # The lowest microversion that serves it, for clients and tests
        # that pick one per operation.
        'x-memagg-min-microversion': since,
        'parameters': parameters,
        'responses': responses,
    }
    if route.body is not None:
        operation['requestBody'] = {
            'required': False,
            'description': 'A JSON object (Content-Type application/json) '
                           'nested at most %d deep; an empty body is {}.'
                           % validation.MAX_BODY_DEPTH,
            'content': {'application/json': {'schema': route.body}}}
    if route.public:
        operation['security'] = []
    _add_example(operation, examples.load(route.operation_id))
    return operation


def _add_example(operation, example):
    """Put a real call (memagg.api.examples, made at the newest
    microversion) into ``operation``: its request line and headers as
    x-memagg-example-request, its request and response bodies as the
    bodies' examples."""
    if example is None:
        return
    operation['x-memagg-example-request'] = {
        key: example['request'][key] for key in ('method', 'path', 'headers')}
    if 'body' in example['request'] and 'requestBody' in operation:
        operation['requestBody']['content']['application/json'][
            'example'] = example['request']['body']
    response = operation['responses'][str(example['response']['status'])]
    response['content']['application/json']['example'] = example[
        'response']['body']


def build(max_limit):
    """The OpenAPI 3.1 document, for a deployment whose [api] max_limit is
    ``max_limit``."""
    paths = {}
    for route in sorted(base.ROUTES, key=lambda r: r.path):
        paths.setdefault(route.path, {})[route.method.lower()] = _operation(
            route, max_limit)
    return {
        'openapi': '3.1.0',
        'info': {
            'title': 'memagg REST API',
            'version': microversion.to_string(microversion.MAX_VERSION),
            'description': (
                'Memory aggregation for OpenStack. Every error body is '
                'the Error schema; 404 for an unknown route and 405 for a '
                'method a route does not serve have it too.'),
        },
        'jsonSchemaDialect': 'https://json-schema.org/draft/2020-12/schema',
        'components': {
            'schemas': schemas.COMPONENTS,
            'securitySchemes': {'keystone': {
                'type': 'apiKey', 'in': 'header', 'name': 'X-Auth-Token',
                'description': 'A Keystone token ([api] auth_strategy = '
                               'keystone).'}},
        },
        'security': [{'keystone': []}],
        'paths': paths,
    }


def dumps(document):
    """The document as the text kept in api-ref/openapi.json."""
    return json.dumps(document, indent=2, sort_keys=True) + '\n'
