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

"""keystoneauth1's own options in a group of memagg.conf through which
memagg calls another service ([nova], [placement]): the auth plug-in's
and the HTTP session's, registered as every OpenStack service registers
them."""
from keystoneauth1 import loading as ks_loading
from oslo_config import cfg

# The sample config documents the password plug-in, the usual choice.
SAMPLE_AUTH_PLUGIN = 'password'


def _session_opts(timeout):
    session_opts = ks_loading.get_session_conf_options()
    # keystoneauth waits forever by default; a hung request would stall
    # whatever periodic work made it.
    cfg.set_defaults(session_opts, timeout=timeout)
    return session_opts


def register_opts(conf, group, opts, timeout):
    """Register ``group`` with ``opts``, the session options (requests
    time out after ``timeout`` seconds by default) and the auth plug-in's
    options."""
    conf.register_group(group)
    conf.register_opts(opts + _session_opts(timeout), group=group)
    ks_loading.register_auth_conf_options(conf, group.name)


def list_opts(group, opts, timeout):
    """``{group: options}`` for oslo-config-generator, the auth options
    those of SAMPLE_AUTH_PLUGIN."""
    auth = (ks_loading.get_auth_common_conf_options()
            + ks_loading.get_auth_plugin_conf_options(SAMPLE_AUTH_PLUGIN))
    return {group: (opts + _session_opts(timeout)
                    + sorted(auth, key=lambda opt: opt.name))}
