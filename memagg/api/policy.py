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

"""The policy enforcer of the API (oslo.policy)."""
from oslo_policy import policy

from memagg.api import policies
from memagg.common import exceptions

_ENFORCER = None


def make_enforcer(conf):
    """A new enforcer for ``conf`` with memagg's defaults registered."""
    enforcer = policy.Enforcer(conf)
    enforcer.register_defaults(policies.list_rules())
    return enforcer


def get_enforcer():
    """The enforcer of the oslopolicy-* tools (oslo.policy.enforcer entry
    point). It parses memagg's default config files; the API itself builds
    its enforcer with make_enforcer on the conf it was given."""
    global _ENFORCER
    if _ENFORCER is None:
        from memagg.conf import CONF
        CONF([], project='memagg')
        _ENFORCER = make_enforcer(CONF)
    return _ENFORCER


def authorize(enforcer, context, action, target=None):
    """Raise Forbidden unless ``context`` may do ``action`` on ``target``.

    The default target is the caller's own project, for actions that are
    not about one owned object.
    """
    target = target or {'project_id': context.project_id}
    try:
        allowed = enforcer.authorize(action, target, context,
                                     do_raise=False)
    except policy.InvalidScope:
        allowed = False
    if not allowed:
        raise exceptions.Forbidden(action=action)
