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

"""The [memagg] group of nova.conf: how nova-scheduler's RealMemoryFilter
and RealMemoryWeigher reach memagg's API and what they make of its answer.

The group is registered on the ConfigOpts it is given: Nova's
``nova.conf.CONF`` in nova-scheduler (memagg.nova.filters and
memagg.nova.weights do it). memagg's own configuration (memagg.conf) is
never loaded there. Credentials, the HTTP session and the endpoint are
keystoneauth1's options, as in nova.conf's [placement] or [neutron]::

    [memagg]
    auth_type = password
    auth_url = http://controller/identity
    username = nova
    password = ...
    project_name = service
    user_domain_name = Default
    project_domain_name = Default

The account needs the admin role (memagg's policy
``memagg:host_usage:list``). For a memagg API without Keystone:
``auth_type = none`` and ``endpoint_override``.
"""
import collections

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg

from memaggclient import http
from memagg.common import exceptions

GROUP = cfg.OptGroup(
    'memagg', title='memagg (memory aggregation) options',
    help='How nova-scheduler\'s memagg.nova.filters.RealMemoryFilter and '
         'memagg.nova.weights.RealMemoryWeigher read memagg\'s view of '
         'each host\'s real memory (GET /v1/host_usages, microversion '
         '1.5) and what they do when it is missing.')

# The sample config documents the password plug-in, the usual choice.
SAMPLE_AUTH_PLUGIN = 'password'

#: The one service type memagg's client calls.
SERVICE_TYPE = http.SERVICE_TYPE

opts = [
    cfg.IntOpt('cache_ttl', default=10, min=0,
               help='Seconds one answer of memagg\'s API is reused by every '
                    'scheduling request (and by the filter and the weigher '
                    'alike). 0: read it afresh for each scheduling request, '
                    'still once for all its hosts and instances. A failed '
                    'call is not retried for as long either.'),
    cfg.StrOpt('on_failure', default='open',
               choices=[('open', 'the host passes: Nova schedules it as '
                                 'without memagg'),
                        ('closed', 'the host is refused')],
               help='What the filter does with a host memagg cannot vouch '
                    'for: memagg\'s API unreachable or answering badly, the '
                    'host unknown to memagg, or its last report older than '
                    'stale_after. Either way a WARNING says why, once per '
                    'cache_ttl. The weigher ranks such hosts last.'),
    cfg.IntOpt('stale_after', default=120, min=1,
               help='Seconds after which a host\'s last report by '
                    'memagg-compute is too old to trust; the host is then '
                    'treated as on_failure says. Keep it well above '
                    'memagg-compute\'s report interval.'),
    cfg.FloatOpt('expected_wss_ratio', default=0.5, max=1.0,
                 help='Expected working set of a flavor without the extra '
                      'spec memagg:expected_wss_mb, as a share of its RAM: '
                      'a host passes when its real free memory is at least '
                      'this times the flavor\'s memory_mb. Greater than 0, '
                      'at most 1.'),
    cfg.FloatOpt('remote_share', default=0.0, min=0.0, max=1.0,
                 help='Share of the memory memagg\'s reservoir could lend '
                      'now (reservoir_free_mb) that every host may count as '
                      'its own free memory, since it can borrow it as '
                      'remote swap. 0: only local memory counts.'),
    cfg.FloatOpt('weight_multiplier', default=1.0,
                 help='Multiplier of the weigher\'s weight (real free '
                      'memory). Positive spreads VMs onto the hosts with '
                      'the most real free memory, negative stacks them. An '
                      'aggregate\'s memagg_weight_multiplier metadata '
                      'overrides it for its hosts.'),
]

#: The values of ``opts`` that the filter and the weigher act on.
Settings = collections.namedtuple('Settings', [o.dest for o in opts])


def _session_opts():
    session_opts = ks_loading.get_session_conf_options()
    # keystoneauth waits forever by default; a hung memagg API would hold
    # every scheduling request.
    cfg.set_defaults(session_opts, timeout=5)
    return session_opts


def _adapter_opts():
    adapter_opts = ks_loading.get_adapter_conf_options(
        include_deprecated=False)
    # As Nova sets them for the services it calls.
    cfg.set_defaults(adapter_opts, service_type=SERVICE_TYPE,
                     valid_interfaces=['internal', 'public'])
    return adapter_opts


def register_opts(conf):
    """Register [memagg] on ``conf`` (Nova's CONF); calling it again is
    harmless."""
    # A group object of its own: oslo.config copies the one it is given
    # shallowly, so the options an auth plug-in registers on Nova's CONF
    # would otherwise show in any other ConfigOpts given GROUP.
    conf.register_group(cfg.OptGroup(GROUP.name, title=GROUP.title,
                                     help=GROUP.help))
    conf.register_opts(opts + _session_opts() + _adapter_opts(),
                       group=GROUP.name)
    ks_loading.register_auth_conf_options(conf, GROUP.name)


def list_opts():
    """[(group, options)] for oslo-config-generator (namespace
    ``memagg.nova``): nova.conf's [memagg]."""
    auth = (ks_loading.get_auth_common_conf_options()
            + ks_loading.get_auth_plugin_conf_options(SAMPLE_AUTH_PLUGIN))
    return [(GROUP, opts + _session_opts() + _adapter_opts()
             + sorted(auth, key=lambda opt: opt.name))]


def _invalid(name, reason):
    return exceptions.InvalidParameter(field='[%s] %s' % (GROUP.name, name),
                                       reason=reason)


def load(conf):
    """Read every option registered in ``conf``'s [memagg] and return the
    Settings. A value oslo.config refuses, or one of the checks it cannot
    express, raises InvalidParameter naming the option, so that
    nova-scheduler fails at start rather than on its first request."""
    group = conf[GROUP.name]
    for name in group:
        try:
            group[name]
        except (cfg.Error, ValueError) as exc:
            raise _invalid(name, exc)
    if group.expected_wss_ratio <= 0:
        raise _invalid('expected_wss_ratio', 'must be greater than 0 (and '
                       'at most 1), not %s' % group.expected_wss_ratio)
    if group.service_type != SERVICE_TYPE:
        raise _invalid('service_type', 'memagg\'s client calls the %s '
                       'service only; leave it unset (%s), or give the URL '
                       'in endpoint_override' % (SERVICE_TYPE, SERVICE_TYPE))
    return Settings(**{o.dest: group[o.dest] for o in opts})
