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

"""WSGI middleware of the API: development auth, public paths, JSON errors,
the healthcheck path."""
from oslo_middleware import healthcheck
from oslo_middleware import request_id as request_id_mw

from memagg.api import errors

# Set by the Flask app on every request it handles, so JsonErrors leaves its
# (already JSON) errors alone.
HANDLED_KEY = 'memagg.api.handled'


class NoAuth:
    """[api] auth_strategy = noauth: trust the caller, for development.

    Every request acts as an admin of project 'admin' unless it sends
    X-Project-Id and X-Roles itself (tests use them to act as non-admins).
    """

    def __init__(self, application):
        self.application = application

    def __call__(self, environ, start_response):
        project = environ.get('HTTP_X_PROJECT_ID') or 'admin'
        environ['HTTP_X_PROJECT_ID'] = project
        environ.setdefault('HTTP_X_USER_ID', 'noauth-' + project)
        environ.setdefault('HTTP_X_ROLES', 'admin')
        environ['HTTP_X_IDENTITY_STATUS'] = 'Confirmed'
        return self.application(environ, start_response)


class PublicPaths:
    """Send version discovery and the API document past authentication.

    Clients read them before they have a token, as with every OpenStack
    API; every other path goes through ``protected``.
    """

    PATHS = frozenset(['', '/', '/v1', '/v1/', '/v1/openapi.json'])

    def __init__(self, public, protected):
        self.public = public
        self.protected = protected

    def __call__(self, environ, start_response):
        if environ.get('PATH_INFO', '') in self.PATHS:
            return self.public(environ, start_response)
        return self.protected(environ, start_response)


class JsonErrors:
    """Give errors from middleware (keystonemiddleware's 401) memagg's JSON
    error body, keeping their status and headers (WWW-Authenticate)."""

    def __init__(self, application):
        self.application = application

    def __call__(self, environ, start_response):
        captured = {}

        def capture(status, headers, exc_info=None):
            captured['status'], captured['headers'] = status, headers
            if int(status.split()[0]) < 400:
                return start_response(status, headers, exc_info)
            return lambda data: None

        result = self.application(environ, capture)
        status = captured.get('status', '500')
        if int(status.split()[0]) < 400:
            return result
        raw = b''.join(result)
        if hasattr(result, 'close'):
            result.close()
        if environ.get(HANDLED_KEY):
            new_body = raw
        else:
            new_body = errors.rewrite(
                status, raw, environ.get(request_id_mw.ENV_REQUEST_ID))
        headers = [(k, v) for k, v in captured['headers']
                   if k.lower() not in ('content-type', 'content-length')]
        headers += [('Content-Type', 'application/json'),
                    ('Content-Length', str(len(new_body)))]
        start_response(status, headers)
        return [new_body]


class Healthcheck:
    """Answer ``/healthcheck`` with oslo.middleware's healthcheck, without a
    token, as other OpenStack APIs do: load balancers and monitoring probe
    it. Its ``[healthcheck]`` options (``backends``, ``detailed``,
    ``allowed_source_ranges``...) apply.

    It sits outside JsonErrors: its answers, 503 included, are its own
    plain text, HTML or JSON, as clients of other OpenStack APIs expect.
    """

    PATH = '/healthcheck'

    def __init__(self, application, conf):
        self.application = application
        # A request it ignores (from outside allowed_source_ranges) goes on
        # to the API, which does not know the path.
        self.healthcheck = healthcheck.Healthcheck(application, conf)

    def __call__(self, environ, start_response):
        if environ.get('PATH_INFO', '') == self.PATH:
            return self.healthcheck(environ, start_response)
        return self.application(environ, start_response)
