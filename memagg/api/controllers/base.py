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

"""The route registry and what every controller shares.

A controller declares each route with ``@route``: its method and path
(OpenAPI form), query, request body and response schemas, its success
status, the microversion it appeared in and the errors it may return. The
Flask app is built from ROUTES and so is the OpenAPI document, so they
cannot drift.
"""
import dataclasses
import threading
import typing
import urllib.parse

import flask
from oslo_log import log as logging

from memagg.api import microversion
from memagg.api import policy
from memagg.api import request_schemas
from memagg.api import schemas
from memagg.api import validation
from memagg.common import exceptions
from memagg.common import rpc
from memagg.db import listings as db_listings
from memagg.scheduler import rpcapi as scheduler_rpcapi

LOG = logging.getLogger(__name__)


@dataclasses.dataclass
class Route:
    """One route (method and path) of the API.

    ``body`` is the request body's schema (None: the route takes no body);
    ``status`` the status of a success, and ``status_since`` ``((version,
    status), ...)`` the status that replaced it from a later microversion
    on (see :meth:`status_at`); ``min_version`` the microversion
    the route appeared in: below it, the path is unknown (404) or, when
    other methods serve it, the method is not allowed (405).
    """

    path: str
    view: typing.Callable
    summary: str
    response: dict
    query: typing.Callable = None
    path_params: dict = dataclasses.field(default_factory=dict)
    errors: tuple = ()
    public: bool = False
    method: str = 'GET'
    body: dict = None
    status: int = 200
    min_version: tuple = microversion.MIN_VERSION
    status_since: tuple = ()

    def status_at(self, version):
        """The status of a success at microversion ``version``."""
        status = self.status
        for since, later in self.status_since:
            if version >= since:
                status = later
        return status

    @property
    def operation_id(self):
        return self.view.__module__.rsplit('.', 1)[-1] + '_' + \
            self.view.__name__

    @property
    def flask_rule(self):
        rule = self.path
        for name in self.path_params:
            rule = rule.replace('{%s}' % name, '<%s>' % name)
        return rule

    def query_schema(self, max_limit):
        return (self.query(max_limit) if self.query
                else request_schemas.NO_QUERY)


ROUTES = []

# Statuses every authenticated route may return.
COMMON_ERRORS = (400, 401, 403, 406, 500, 503)


def route(path, summary, response, query=None, path_params=None,
          errors=(), public=False, method='GET', body=None, status=200,
          min_version=microversion.MIN_VERSION, status_since=()):
    """Register a view for ``method`` ``path``.

    The view is called as ``view(**path_params, query=dict)``, plus
    ``body=dict`` when the route takes a body, with values already
    validated, and returns the response body.
    """
    def decorator(view):
        ROUTES.append(Route(path, view, summary, response, query,
                            path_params or {}, tuple(errors), public,
                            method, body, status, min_version,
                            tuple(status_since)))
        return view
    return decorator


def methods_at(path, version):
    """The methods that serve ``path`` at microversion ``version``."""
    return sorted(r.method for r in ROUTES
                  if r.path == path and r.min_version <= version)


def list_query(collection):
    """The ``query`` argument of @route for a paginated collection."""
    return lambda max_limit: request_schemas.list_query(collection, max_limit)


def context():
    """The RequestContext of the current request."""
    return flask.g.context


def version():
    """The microversion the current request asked for, e.g. (1, 1)."""
    return flask.g.version


def conf():
    """The configuration the app was built with."""
    return flask.current_app.config['memagg_conf']


_MADE_LOCK = threading.Lock()


def made_once(key, make):
    """The app's ``key``, made by ``make(conf)`` on its first use (kept in
    the app's config)."""
    config = flask.current_app.config
    with _MADE_LOCK:
        if config.get(key) is None:
            config[key] = make(config['memagg_conf'])
        return config[key]


def _scheduler_api(conf):
    rpc.init(conf, binary='memagg-api')
    return scheduler_rpcapi.SchedulerAPI()


def scheduler_api():
    """The app's RPC client of memagg-scheduler, made on first use (the
    transport comes from [DEFAULT] transport_url)."""
    return made_once('scheduler_api', _scheduler_api)


def call_scheduler(method, what, **kwargs):
    """Call memagg-scheduler's ``method`` (an RPC call of SchedulerAPI)
    and return its result, waiting at most [DEFAULT] rpc_response_timeout
    seconds; 503 naming ``what`` (the request's purpose) when the
    scheduler does not answer or the bus cannot be reached."""
    timeout = conf().rpc_response_timeout
    try:
        return getattr(scheduler_api(), method)(context(), timeout=timeout,
                                                **kwargs)
    except (exceptions.RPCTimeout, exceptions.ServiceUnavailable) as exc:
        LOG.error('memagg-scheduler did not answer %s: %s', method, exc)
        raise exceptions.ServiceUnavailable(reason=(
            'memagg-scheduler did not answer within %d s to %s; check that '
            'it runs, and retry later' % (timeout, what)))


def cast_scheduler(method, what, *args, **kwargs):
    """Cast ``method`` (a cast of SchedulerAPI: run_audit, execute_audit,
    finish_release, finish_reclaim) to memagg-scheduler; 503 naming
    ``what`` when the bus cannot take it."""
    try:
        getattr(scheduler_api(), method)(context(), *args, **kwargs)
    except exceptions.ServiceUnavailable as exc:
        LOG.error('Could not reach memagg-scheduler about %s: %s', what,
                  exc)
        raise exceptions.ServiceUnavailable(
            reason='memagg-scheduler could not be reached over the message '
                   'bus about %s; retry later' % what)


def enforce(action, target=None):
    """Apply policy ``action`` to the current request."""
    policy.authorize(flask.current_app.config['enforcer'], context(),
                     action, target)


def paginate(collection, query, render, filters=None):
    """One page of ``collection`` as a response body, with a next link when
    the page is full.

    ``query`` is the validated query string; ``filters`` adds filters the
    caller may not choose (a project, an instance).
    """
    spec = schemas.COLLECTIONS[collection]
    conf = flask.current_app.config['memagg_conf']
    limit = query.get('limit', conf.api.default_limit)
    wanted = dict(filters or {})
    wanted.update({k: v for k, v in query.items() if k in spec['filters']})
    since, until = query.get('since'), query.get('until')
    since = since and validation.parse_datetime(since)
    until = until and validation.parse_datetime(until)
    if since and until and since > until:
        raise exceptions.InvalidParameter(
            field='until', reason='is before since: give an until later '
                                  'than since')
    listing = db_listings.LISTINGS[spec['listing']]
    sort_keys = ([query['sort_key']] if 'sort_key' in query
                 else list(listing['sort']))
    sort_dirs = [query.get('sort_dir', 'asc')] * len(sort_keys)
    rows = db_listings.list_resources(
        context(), spec['listing'], filters=wanted, limit=limit,
        marker=query.get('marker'), sort_keys=sort_keys,
        sort_dirs=sort_dirs, since=since, until=until)
    links = []
    if len(rows) == limit:
        key = listing['key']
        args = dict(flask.request.args.items())
        args.update(limit=limit, marker=getattr(rows[-1], key))
        links.append({'rel': 'next', 'href': link(
            flask.request.path + '?' + urllib.parse.urlencode(args))})
    return {collection: [render(row) for row in rows], 'links': links}


def link(path):
    """The href of ``path`` (from the API's root: /v1/hosts?...) in a
    response: under [api] public_endpoint when it is set; else under the
    scheme, host and prefix a proxy named, when http_proxy_to_wsgi trusts
    it; else the path from the server's root alone. Never under the Host
    header a client sent, which anyone can set."""
    conf = flask.current_app.config['memagg_conf']
    request = flask.request
    if conf.api.public_endpoint:
        return conf.api.public_endpoint.rstrip('/') + path
    if _proxy_named_host(conf, request.environ):
        return request.host_url.rstrip('/') + request.script_root + path
    return request.script_root + path


def _proxy_named_host(conf, environ):
    if not conf.oslo_middleware.enable_proxy_headers_parsing:
        return False
    return ('HTTP_X_FORWARDED_HOST' in environ
            or 'host=' in environ.get('HTTP_FORWARDED', '').lower())
