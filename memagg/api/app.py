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

"""Build the API's WSGI application.

``create_app(conf)`` returns the whole pipeline: oslo.middleware request_id;
oslo.middleware http_proxy_to_wsgi (the scheme, host and path prefix a
reverse proxy reports, with ``[oslo_middleware]
enable_proxy_headers_parsing``); oslo.middleware's healthcheck at
``/healthcheck``; JSON error bodies for middleware errors; authentication
([api] auth_strategy) in front of everything but version discovery; and the
Flask app whose routes come from memagg.api.controllers.
"""
import flask
from keystonemiddleware import auth_token
from oslo_middleware import http_proxy_to_wsgi
from oslo_middleware import request_id
from werkzeug import exceptions as http_exc

from memagg.api import controllers  # noqa: F401  (registers the routes)
from memagg.api.controllers import base
from memagg.api import errors
from memagg.api import microversion
from memagg.api import middleware
from memagg.api import policy
from memagg.api import validation
from memagg.common import context as memagg_context
from memagg.common import exceptions
from memagg.common import rpc


def set_api_defaults(conf):
    """Defaults of a process that serves the API.

    oslo.db retries a failed first connection ([database] max_retries times,
    [database] retry_interval apart): right for a daemon starting up, wrong
    for a request, which must get 503 and Retry-After at once. A value in the
    config file still wins.
    """
    conf.set_default('max_retries', 0, group='database')


def _check_version(route):
    """404, or 405 when other methods serve the path, for a route asked for
    below the microversion it appeared in."""
    version = flask.g.version
    if version >= route.min_version:
        return
    methods = base.methods_at(route.path, version)
    if not methods:
        raise http_exc.NotFound()
    allowed = set(methods) | {'OPTIONS'}
    if 'GET' in allowed:
        allowed.add('HEAD')
    raise http_exc.MethodNotAllowed(valid_methods=sorted(allowed))


def _body():
    """The request's body, its size checked before it is read and its type
    after."""
    request = flask.request
    limit = request.max_content_length
    if request.content_length is not None and request.content_length > limit:
        raise exceptions.BodyTooLarge(size=request.content_length,
                                      limit=limit, field='body')
    try:
        raw = request.get_data()
    except http_exc.RequestEntityTooLarge:
        # A chunked body without Content-Length, cut at the limit.
        raise exceptions.BodyTooLarge(size='more than %d' % limit,
                                      limit=limit, field='body')
    validation.check_media_type(request.headers.get('Content-Type'), raw)
    return raw


def _view(route, query_schema):
    def view(**path_values):
        _check_version(route)
        for name, value in path_values.items():
            validation.validate_path(name, value, route.path_params[name])
        query = validation.validate_query(flask.request.args, query_schema)
        kwargs = dict(path_values, query=query)
        if route.body is not None:
            kwargs['body'] = validation.validate_body(_body(), route.body)
        response = flask.jsonify(route.view(**kwargs))
        response.status_code = route.status_at(flask.g.version)
        return response
    view.__name__ = route.operation_id
    return view


def _flask_app(conf):
    app = flask.Flask('memagg.api')
    app.config['memagg_conf'] = conf
    # Validation and the served OpenAPI document must agree on this.
    app.config['max_limit'] = conf.api.max_limit
    app.config['MAX_CONTENT_LENGTH'] = conf.api.max_request_body_size
    app.config['enforcer'] = policy.make_enforcer(conf)
    app.json.sort_keys = True
    public = set()
    for route in base.ROUTES:
        query_schema = route.query_schema(app.config['max_limit'])
        app.add_url_rule(route.flask_rule, route.operation_id,
                         _view(route, query_schema),
                         methods=[route.method], strict_slashes=False)
        if route.public:
            public.add(route.operation_id)

    @app.before_request
    def negotiate():
        # Built in the worker, after uWSGI forked it, by the first request
        # that may change a state (and so be notified); reads need no bus.
        if flask.request.method not in ('GET', 'HEAD', 'OPTIONS'):
            rpc.init(conf, binary='memagg-api')
        environ = flask.request.environ
        environ[middleware.HANDLED_KEY] = True
        flask.g.version = microversion.parse_header(
            flask.request.headers.get(microversion.HEADER))
        if flask.request.endpoint is None or flask.request.endpoint in public:
            return
        if environ.get('HTTP_X_IDENTITY_STATUS') != 'Confirmed':
            raise http_exc.Unauthorized(
                'The request you have made requires authentication.')
        flask.g.context = memagg_context.RequestContext.from_environ(environ)

    @app.after_request
    def echo_version(response):
        version = flask.g.get('version')
        if version is not None:
            response.headers[microversion.HEADER] = (
                microversion.response_header(version))
        response.vary.add(microversion.HEADER)
        return response

    errors.register(app, conf.api.db_retry_after)
    return app


def _authenticated(app, conf):
    if conf.api.auth_strategy == 'noauth':
        return middleware.NoAuth(app)
    # keystonemiddleware reads [keystone_authtoken] from this conf object
    # (memagg.conf.api registers its options, before any config is parsed).
    return auth_token.AuthProtocol(app, {'oslo_config_config': conf})


def create_app(conf=None):
    """The full WSGI application for ``conf`` (default memagg.conf.CONF,
    which must be parsed)."""
    if conf is None:
        from memagg.conf import CONF as conf
    app = _flask_app(conf)
    pipeline = middleware.PublicPaths(app, _authenticated(app, conf))
    pipeline = middleware.JsonErrors(pipeline)
    pipeline = middleware.Healthcheck(pipeline, conf)
    # Before everything that builds URLs or reads the client's address.
    pipeline = http_proxy_to_wsgi.HTTPProxyToWSGI(pipeline, conf)
    return request_id.RequestId(pipeline)
