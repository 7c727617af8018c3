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

"""Who may call which route: the authorization matrix, derived from the
registered policy rules.

For every route of memagg.api (method and path) and each secure-RBAC
persona, ``matrix`` evaluates the rules documented for that operation with
the enforcer memagg-api builds, for a token like the persona's. The
functional test test_policy_matrix calls every route with real Keystone
tokens and checks the answers against it; ``python -m
memagg.api.policy_matrix`` writes the table the admin guide includes
(doc/source/admin/policy-matrix.inc), which a unit test keeps in step.
"""
import collections
import dataclasses
import sys

from memagg.api import controllers  # noqa: F401  (registers the routes)
from memagg.api.controllers import base
from memagg.api import policies
from memagg.api.policies import instances as instance_policies
from memagg.api import policy
from memagg.common import context as memagg_context
from memagg.common import exceptions

# What a persona gets from a route.
ALLOWED = 'allowed'
DENIED = 'denied (403)'
# Another project's object, as Nova answers: not found, so that its
# existence is not told.
NOT_FOUND = 'not found (404)'
UNAUTHENTICATED = 'no (401)'

# The project whose objects the matrix asks about, and another one.
OWNER = 'owner-project'
OTHER = 'other-project'


@dataclasses.dataclass(frozen=True)
class Persona:
    """A caller: the roles its token carries (as Keystone expands implied
    roles) and the project it is scoped to; no token when roles is None."""

    name: str
    roles: tuple
    project_id: str


# Roles as Keystone's tokens carry them: admin implies manager, which
# implies member, which implies reader.
PERSONAS = (
    Persona('admin', ('admin', 'manager', 'member', 'reader'),
            'admin-project'),
    Persona('project member', ('member', 'reader'), OWNER),
    Persona('project reader', ('reader',), OWNER),
    Persona('member of another project', ('member', 'reader'), OTHER),
    Persona('no token', None, ''),
)

# Rules whose target is the object's own project (an instance's); every
# other rule's target is the caller's project.
OWNER_TARGETED = frozenset([instance_policies.GET, instance_policies.WSS])

# What each rule that widens a route's answer adds to it: a caller the
# rule does not allow is answered without it.
WIDENS = {instance_policies.LIST_ALL_PROJECTS: 'other projects',
          instance_policies.HOST: 'hosts'}


def without(*withheld):
    """The outcome of a route answered without what the named widenings
    add (WIDENS' values)."""
    return 'allowed, without ' + ' or '.join(withheld)


def route_rules():
    """{(method, path): [rule names]}, in registration order: the first
    gates the route, any other widens what it shows."""
    found = collections.defaultdict(list)
    for rule in policies.list_rules():
        for operation in getattr(rule, 'operations', ()):
            found[(operation['method'], operation['path'])].append(
                rule.name)
    return found


def _passes(enforcer, persona, rule, owner=OWNER):
    target = {'project_id': owner if rule in OWNER_TARGETED
              else persona.project_id}
    ctx = memagg_context.RequestContext(
        user_id='user-of-' + persona.project_id,
        project_id=persona.project_id, roles=list(persona.roles))
    try:
        policy.authorize(enforcer, ctx, rule, target)
    except exceptions.Forbidden:
        return False
    return True


def outcome(enforcer, route, persona, rules):
    """What ``persona`` gets from ``route``, guarded by ``rules``."""
    if route.public:
        return ALLOWED
    if persona.roles is None:
        return UNAUTHENTICATED
    if not rules:
        raise LookupError('no policy rule documents %s %s: add one to '
                          'memagg/api/policies' % (route.method, route.path))
    if not _passes(enforcer, persona, rules[0]):
        if rules[0] in OWNER_TARGETED and _passes(
                enforcer, persona, rules[0], owner=persona.project_id):
            return NOT_FOUND
        return DENIED
    withheld = [WIDENS[rule] for rule in rules[1:]
                if not _passes(enforcer, persona, rule)]
    return without(*withheld) if withheld else ALLOWED


def matrix(enforcer):
    """[(route, {persona name: outcome})] for every route, in the order
    they are registered."""
    rules = route_rules()
    return [(route, {persona.name: outcome(
        enforcer, route, persona, rules[(route.method, route.path)])
        for persona in PERSONAS}) for route in base.ROUTES]


def default_enforcer():
    """An enforcer with memagg's defaults and no policy file."""
    from oslo_config import cfg

    conf = cfg.ConfigOpts()
    conf([], project='memagg', default_config_files=[])
    return policy.make_enforcer(conf)


def rst(enforcer=None):
    """The matrix as the reStructuredText table the admin guide includes."""
    enforcer = enforcer or default_enforcer()
    rules = route_rules()
    header = ['Route', 'Rule'] + [p.name.capitalize() for p in PERSONAS]
    rows = []
    for route, cells in matrix(enforcer):
        names = rules[(route.method, route.path)]
        rows.append(['``%s %s``' % (route.method, route.path),
                     ', '.join('``%s``' % n for n in names) or '(public)']
                    + [cells[p.name] for p in PERSONAS])
    lines = ['.. Generated by python -m memagg.api.policy_matrix from the',
             '   default rules; do not edit.', '',
             '.. list-table::', '   :header-rows: 1', '']
    for row in [header] + rows:
        lines.append('   * - ' + row[0])
        lines += ['     - ' + cell for cell in row[1:]]
    return '\n'.join(lines) + '\n'


if __name__ == '__main__':
    sys.stdout.write(rst())
