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

"""A tempest REST client of memagg-api v1: one method per operation.

Every answer is checked against the API's own OpenAPI document (``GET
/v1/openapi.json``, read once per client): a success against its route's
response schema for that status, an error against the ``Error`` schema.
So each test also proves the deployed API keeps its published contract.
"""
import urllib.parse

import jsonschema
from oslo_serialization import jsonutils
from tempest.lib.common import api_version_utils
from tempest.lib.common import rest_client
from tempest.lib import exceptions as lib_exc

# The service type named in OpenStack-API-Version.
SERVICE_TYPE = 'memory-aggregation'
HEADER = 'OpenStack-API-Version'


class MemaggClient(rest_client.RestClient):
    """Calls memagg-api with the microversion a test chose
    (``api_microversion``: ``'1.2'``, ``'latest'``, or None for none).

    List methods take the query parameters as keyword arguments; create
    methods take the request body's fields.
    """

    api_microversion = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._document = None

    def get_headers(self, accept_type=None, send_type=None):
        headers = super().get_headers(accept_type, send_type)
        if self.api_microversion:
            headers[HEADER] = '%s %s' % (SERVICE_TYPE, self.api_microversion)
        return headers

    def request(self, method, url, extra_headers=False, headers=None,
                body=None, chunked=False):
        resp, resp_body = super().request(method, url, extra_headers,
                                          headers, body, chunked)
        # 'latest' is whatever the server's maximum is; any other version
        # asked for must be the one served.
        if self.api_microversion and self.api_microversion != 'latest':
            api_version_utils.assert_version_header_matches_request(
                HEADER, '%s %s' % (SERVICE_TYPE, self.api_microversion),
                resp)
        return resp, resp_body

    def _error_checker(self, resp, resp_body):
        if resp.status >= 400:
            try:
                errors = jsonutils.loads(resp_body)
            except ValueError:
                raise lib_exc.InvalidHTTPResponseBody(
                    'error %d without a JSON body: %r' % (resp.status,
                                                          resp_body))
            self._check({'$ref': '#/components/schemas/Error'}, errors,
                        'error %d' % resp.status)
        super()._error_checker(resp, resp_body)

    def openapi_document(self):
        """The API's OpenAPI document, read once (it needs no token)."""
        if self._document is None:
            resp, raw = self.raw_request(self.base_url + '/v1/openapi.json',
                                         'GET')
            if resp.status != 200:
                raise lib_exc.UnexpectedResponseCode(
                    'GET /v1/openapi.json: %d %s' % (resp.status, raw))
            self._document = jsonutils.loads(raw)
        return self._document

    def _check(self, schema, body, what):
        document = self.openapi_document()
        # $refs point into the document's components.
        validator = jsonschema.Draft202012Validator(
            dict(schema, components=document['components']),
            format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
        error = jsonschema.exceptions.best_match(validator.iter_errors(body))
        if error is not None:
            raise lib_exc.InvalidHTTPResponseBody(
                '%s does not match the OpenAPI document at %s: %s'
                % (what, '/'.join(map(str, error.absolute_path)) or 'the top',
                   error.message))

    def _call(self, method, path, status, params=None, body=None, **values):
        """``method`` ``path`` (the document's form, e.g.
        /v1/hosts/{name}, filled from ``values``); check the status and
        the body against the document."""
        url = path.format(**{name: urllib.parse.quote(str(value), safe='')
                             for name, value in values.items()})
        if params:
            url += '?' + urllib.parse.urlencode(sorted(params.items()))
        resp, raw = self.request(
            method, url.lstrip('/'),
            body=None if body is None else jsonutils.dumps(body))
        self.expected_success(status, resp.status)
        parsed = jsonutils.loads(raw)
        operation = self.openapi_document()['paths'][path][method.lower()]
        self._check(operation['responses'][str(status)]['content'][
            'application/json']['schema'], parsed, '%s %s' % (method, path))
        return rest_client.ResponseBody(resp, parsed)

    # /v1/services
    def list_services(self, **params):
        return self._call('GET', '/v1/services', 200, params)

    # /v1/hosts
    def list_hosts(self, **params):
        return self._call('GET', '/v1/hosts', 200, params)

    def show_host(self, name, **params):
        return self._call('GET', '/v1/hosts/{name}', 200, params, name=name)

    def reclaim_host(self, name, **body):
        return self._call('POST', '/v1/hosts/{name}/reclaim', 200,
                          body=body, name=name)

    # /v1/host_usages
    def list_host_usages(self, **params):
        return self._call('GET', '/v1/host_usages', 200, params)

    # /v1/instances
    def list_instances(self, **params):
        return self._call('GET', '/v1/instances', 200, params)

    def show_instance(self, uuid, **params):
        return self._call('GET', '/v1/instances/{uuid}', 200, params,
                          uuid=uuid)

    def list_instance_wss(self, uuid, **params):
        return self._call('GET', '/v1/instances/{uuid}/wss', 200, params,
                          uuid=uuid)

    # /v1/reservoir
    def show_reservoir(self, **params):
        return self._call('GET', '/v1/reservoir', 200, params)

    # /v1/grants
    def list_grants(self, **params):
        return self._call('GET', '/v1/grants', 200, params)

    def show_grant(self, uuid, **params):
        return self._call('GET', '/v1/grants/{uuid}', 200, params, uuid=uuid)

    def create_grant(self, **body):
        return self._call('POST', '/v1/grants', 201, body=body)

    def delete_grant(self, uuid):
        return self._call('DELETE', '/v1/grants/{uuid}', 202, uuid=uuid)

    # /v1/audits
    def list_audits(self, **params):
        return self._call('GET', '/v1/audits', 200, params)

    def show_audit(self, uuid, **params):
        return self._call('GET', '/v1/audits/{uuid}', 200, params, uuid=uuid)

    def create_audit(self, **body):
        return self._call('POST', '/v1/audits', 202, body=body)

    def execute_audit(self, uuid):
        return self._call('POST', '/v1/audits/{uuid}/execute', 202,
                          body={}, uuid=uuid)

    # /v1/migrations
    def list_migrations(self, **params):
        return self._call('GET', '/v1/migrations', 200, params)

    def show_migration(self, uuid, **params):
        return self._call('GET', '/v1/migrations/{uuid}', 200, params,
                          uuid=uuid)

    def create_migration(self, **body):
        return self._call('POST', '/v1/migrations', 202, body=body)
