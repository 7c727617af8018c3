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

"""keystoneauth1 sessions from an option group ([nova], [placement]), with
a missing or incomplete auth plug-in raised as InvalidParameter naming the
option, so that the service using them fails at start."""
from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading

from memagg.common import exceptions


def load_auth(conf, group, unset_reason):
    """The auth plug-in of option group ``group``. ``unset_reason`` is the
    InvalidParameter reason when ``auth_type`` is not set: why credentials
    are needed and how to give them."""
    try:
        auth = ks_loading.load_auth_from_conf_options(conf, group)
    except ks_exc.NoMatchingPlugin as exc:
        raise exceptions.InvalidParameter(
            field='[%s] auth_type' % group,
            reason='%s; use a keystoneauth1 plug-in name such as password'
            % exc)
    except ks_exc.MissingRequiredOptions as exc:
        names = ', '.join('[%s] %s' % (group, opt.dest)
                          for opt in exc.options)
        raise exceptions.InvalidParameter(
            field=names, reason='required by auth_type %s; set it'
            % conf[group].auth_type)
    if auth is None:
        raise exceptions.InvalidParameter(
            field='[%s] auth_type' % group, reason=unset_reason)
    return auth


def load_session(conf, group, unset_reason):
    """A keystoneauth1 Session with the auth plug-in and the session
    options (timeout, TLS) of ``group``; see :func:`load_auth`."""
    return ks_loading.load_session_from_conf_options(
        conf, group, auth=load_auth(conf, group, unset_reason))
