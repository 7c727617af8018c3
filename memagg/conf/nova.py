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

"""Options of the [nova] group: how memagg reaches Nova (and Glance).

The credentials and the HTTP session are keystoneauth1's own options,
registered the way every OpenStack service registers them, so an operator
writes the same lines as in nova.conf's [neutron] or [glance] sections:
``auth_type = password``, ``auth_url``, ``username``, ... The account must
be allowed to show any project's servers, and for memagg-scheduler to
live-migrate them and to enable and disable compute services: the admin
role, by Nova's default policy.
"""
from oslo_config import cfg

from memagg.conf import keystoneauth

GROUP = cfg.OptGroup('nova', title='Nova (compute API) options',
                     help='Credentials and endpoint memagg uses to read '
                          'servers from Nova and their images from Glance, '
                          'and to execute consolidation plans (live '
                          'migrations, compute services disabled and '
                          'enabled); used by the nova compute API driver '
                          '([compute] compute_api_driver = nova). The '
                          'account needs the admin role.')

#: Seconds a request may take (the session's timeout default).
TIMEOUT = 30

opts = [
    cfg.StrOpt('region_name',
               help='Region of the Nova and Glance endpoints in the '
                    'Keystone catalog; unset takes the catalog\'s only or '
                    'first region.'),
    cfg.StrOpt('interface', default='internal',
               choices=['public', 'internal', 'admin'],
               help='Which catalog endpoint of Nova and Glance to call.'),
    cfg.URIOpt('endpoint_override', schemes=['http', 'https'],
               help='Nova\'s URL (e.g. http://controller:8774/v2.1), used '
                    'instead of the catalog\'s compute endpoint. Glance is '
                    'still found in the catalog.'),
    cfg.IntOpt('weight_cache_ttl', default=300, min=1,
               help='Seconds a VM\'s QoS weight read from Nova is reused '
                    'before memagg-compute asks again; also how long it '
                    'waits before retrying after Nova failed to answer. '
                    'A resize to a flavor with another memagg:weight '
                    'takes effect within this time.'),
]


def register_opts(conf):
    keystoneauth.register_opts(conf, GROUP, opts, TIMEOUT)


def list_opts():
    return keystoneauth.list_opts(GROUP, opts, TIMEOUT)
