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

"""JSON error bodies, in the API working group's ``errors`` format.

Every error the API returns, from Flask, from memagg or from middleware in
front of it, has the body ``{"errors": [{"status", "code", "title",
"detail", "request_id"[, "field"]}]}``.
"""
import http
import json
import re

import flask
from oslo_db import exception as db_exc
from oslo_log import log as logging
from oslo_middleware import request_id as request_id_mw
from werkzeug import exceptions as http_exc

from memagg.api import microversion
from memagg.common import exceptions

LOG = logging.getLogger(__name__)


def _code(name):
    return 'memagg.' + re.sub(r'(?<!^)(?=[A-Z])', '_', name).lower()


def body(status, detail, code=None, request_id=None, field=None):
    """The error body as a dict."""
    error = {
        'status': status,
        'code': code or 'memagg.%s' % http.HTTPStatus(status).name.lower(),
        'title': http.HTTPStatus(status).phrase,
        'detail': detail,
        'request_id': request_id,
    }
    if field is not None:
        error['field'] = field
    return {'errors': [error]}


def _response(status, detail, code=None, field=None, headers=None):
    request_id = flask.request.environ.get(request_id_mw.ENV_REQUEST_ID)
    response = flask.jsonify(body(status, detail, code, request_id, field))
    response.status_code = status
    response.headers.extend(headers or {})
    return response


def register(app, retry_after):
    """Install handlers that turn every failure of a view into JSON."""

    @app.errorhandler(exceptions.MemaggException)
    def memagg_error(exc):
        return _response(exc.code, exc.message,
                         code=_code(type(exc).__name__),
                         field=exc.kwargs.get('field'))

    @app.errorhandler(microversion.MalformedVersion)
    def malformed_version(exc):
        return _response(400, str(exc), code='memagg.malformed_version',
                         field=microversion.HEADER)

    @app.errorhandler(microversion.UnsupportedVersion)
    def unsupported_version(exc):
        return _response(406, str(exc), code='memagg.unsupported_version',
                         field=microversion.HEADER)

    @app.errorhandler(http_exc.HTTPException)
    def http_error(exc):
        headers = {}
        if exc.code == 405:
            headers['Allow'] = ', '.join(sorted(exc.valid_methods or ()))
            detail = ('%s is not allowed on %s: use %s'
                      % (flask.request.method, flask.request.path,
                         headers['Allow']))
        elif exc.code == 404:
            detail = ('No resource at %s: see GET / and '
                      '/v1/openapi.json for the routes' % flask.request.path)
        else:
            detail = exc.description
        return _response(exc.code, detail, headers=headers)

    @app.errorhandler(db_exc.DBConnectionError)
    def db_unreachable(exc):
        LOG.error('Database unreachable: %s', exc)
        return _response(503, 'The database cannot be reached; retry later.',
                         code='memagg.database_unavailable',
                         headers={'Retry-After': str(retry_after)})

    @app.errorhandler(Exception)
    def unexpected(exc):
        # The traceback goes to the log only, never to the client.
        LOG.exception('Unexpected error in %s %s', flask.request.method,
                      flask.request.path)
        return _response(500, 'The server failed to handle the request; '
                              'its log has the details.')


def rewrite(status, raw_body, request_id):
    """The JSON error body for an error a middleware (auth) produced."""
    code = int(status.split()[0])
    detail = http.HTTPStatus(code).phrase
    try:
        detail = json.loads(raw_body)['error']['message']
    except (ValueError, KeyError, TypeError):
        text = raw_body.decode('utf-8', 'replace').strip()
        detail = text.splitlines()[-1] if text else detail
    return json.dumps(body(code, detail, request_id=request_id)).encode()
