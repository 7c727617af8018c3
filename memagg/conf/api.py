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

"""Options of the [api] group: the REST API service."""
from keystonemiddleware import opts as authtoken_opts
from oslo_config import cfg

GROUP = cfg.OptGroup('api', title='REST API options')

opts = [
    cfg.HostAddressOpt('host', default='127.0.0.1',
                       help='Address memagg-api listens on.'),
    cfg.PortOpt('port', default=8799, min=1,
                help='Port memagg-api listens on.'),
    cfg.IntOpt('workers', min=1, sample_default='<number of CPUs>',
               help='uWSGI worker processes memagg-api runs. Default: the '
                    'number of CPUs.'),
    cfg.IntOpt('threads', default=4, min=1,
               help='Threads per memagg-api worker process: requests one '
                    'worker serves at once (they overlap database and '
                    'message bus waits).'),
    cfg.StrOpt('path_prefix', default='', regex=r'^(/[^/\s]+)*$',
               help='URL path memagg-api serves the API under, e.g. '
                    '/memory-aggregation when a reverse proxy forwards '
                    'http://PROXY/memory-aggregation/... unchanged. Links in '
                    'responses carry it. Empty: the API is at /. Requests '
                    'outside the prefix are served as if under it, so a load '
                    'balancer may still check /healthcheck.'),
    cfg.URIOpt('public_endpoint', schemes=['http', 'https'],
               help='The URL clients reach memagg-api at, e.g. '
                    'https://cloud.example/memory-aggregation: the links in '
                    'responses start with it. Unset, they start with the '
                    'scheme, host and prefix a proxy named when '
                    '[oslo_middleware] enable_proxy_headers_parsing is on '
                    'and the request carried X-Forwarded-Host or Forwarded '
                    'host=, else they are paths from the server\'s root '
                    '(/v1/...), which clients resolve against the URL they '
                    'asked: never the Host header a client sent.'),
    cfg.StrOpt('auth_strategy', default='keystone',
               choices=[('keystone',
                         'Validate tokens with keystonemiddleware'),
                        ('noauth', 'Development only: every request is an '
                                   'admin of project "admin"')],
               help='How requests are authenticated.'),
    cfg.IntOpt('max_limit', default=1000, min=1,
               help='Largest page a list request may ask for with limit.'),
    cfg.IntOpt('default_limit', default=100, min=1,
               help='Page size of a list request that gives no limit.'),
    cfg.IntOpt('max_request_body_size', default=114688, min=1024,
               help='Largest request body, in bytes, memagg-api reads; a '
                    'larger one is refused with 413 before it is read. '
                    'memagg\'s largest body, an audit\'s parameters, is a '
                    'few KiB.'),
    cfg.IntOpt('db_retry_after', default=5, min=1,
               help='Seconds sent in Retry-After when the database cannot '
                    'be reached (HTTP 503).'),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(opts, group=GROUP)
    # keystonemiddleware registers [keystone_authtoken] on the global
    # cfg.CONF at import; memagg's conf is its own, so it registers them
    # here, where a config file or a test can set them before the app is
    # built.
    for group, group_opts in authtoken_opts.list_auth_token_opts():
        conf.register_opts(group_opts, group=group)


def list_opts():
    return {GROUP: opts}
