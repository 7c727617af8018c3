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

"""The authorization matrix, checked through the real API with real tokens.

memagg.api.policy_matrix evaluates the registered default rules for every
route and persona; here each cell is called over HTTP on memagg-api with
auth_strategy = keystone, with a token the real Keystone issued to a user
of that persona: the bootstrap admin, a member and a reader of the
project that owns the instances, a member of another project, and no
token. The answer must be what the rules say: the route's success status
when allowed, 403 when denied, 404 for another project's instance, 401
without a token; for the instance listing, only the caller's project's
instances unless the rules allow all; an instance's host, and its WSS
samples', only to the personas the rules show hosts to.

The database holds memagg.tests.unit.api.data with instance A owned by
the member's project. memagg-scheduler's manager serves the routes that
ask it, on oslo.messaging's fake driver, with memagg-compute stood in for
at its RPC client (no hypervisor host runs here).
"""
import uuid

from keystoneauth1 import loading as ks_loading
import pytest
import requests
from sqlalchemy import orm

from memagg.api import app as api_app
from memagg.api import microversion
from memagg.api import policy
from memagg.api import policy_matrix
from memagg.conf import CONF
from memagg.db import facade as db_facade
from memagg.db.sqlalchemy import models
from memagg.demo import keystone as demo_keystone
from memagg.tests.rpc_fixtures import fake_rpc  # noqa: F401
from memagg.tests.unit.api import data
from memagg.tests.unit.api import live
from memagg.tests.unit.api.reservoir_scheduler import scheduler  # noqa: F401,E501
from memagg.tests.unit.scheduler.reservoir_fixtures import reservoir_opts  # noqa: F401,E501

pytestmark = [pytest.mark.functional, pytest.mark.slow]

LATEST = {microversion.HEADER: 'memory-aggregation latest'}

# Valid bodies of the routes that take one: a request is validated before
# its policy is checked.
BODIES = {
    'grants_create_grant': {'instance_uuid': data.INSTANCE_A,
                            'size_mb': 64},
    'hosts_reclaim_host': {'size_mb': 64},
    # Instance B: a migration of A would hold A's grant, which the
    # DELETE of the grant then finds busy (409).
    'migrations_create_migration': {'instance_uuid': data.INSTANCE_B,
                                    'dest_host': 'host-1'},
}
# Allowed calls whose answer is a refusal of the state, not of the caller:
# the sample audit has run already.
ALLOWED_STATUS = {'audits_execute_audit': 409}
# Calls that change state go last, so the reads see the seeded rows.
ORDER = {'GET': 0, 'POST': 1, 'DELETE': 2}


@pytest.fixture(scope='module')
def other_member(keystone):
    """A member of a project of its own, created in the real Keystone."""
    admin = demo_keystone.Admin(keystone)
    account = demo_keystone.Account(
        'other-member-' + uuid.uuid4().hex[:8], 'other-secret',
        'memagg-other-' + uuid.uuid4().hex[:8])
    account.project_id = admin.create_project(account.project_name)
    account.user_id = admin.create_user(account)
    admin.grant(account, 'member')
    return account


@pytest.fixture
def tokens(keystone, other_member):
    """A real token per persona of policy_matrix (None: no token)."""
    return {'admin': keystone.token(keystone.admin),
            'project member': keystone.token(keystone.member),
            'project reader': keystone.token(keystone.reader),
            'member of another project': keystone.token(other_member),
            'no token': None}


@pytest.fixture
def seeded(sqlite_db, keystone):
    """The database of memagg.tests.unit.api.data, instance A owned by the
    member's project. Written before memagg-scheduler starts: its first
    writes (heartbeat, purge) racing the seed's transaction made SQLite
    refuse the seed ("database is locked") late in a CI run."""
    data.load()
    with orm.Session(db_facade.get_engine()) as session, session.begin():
        session.query(models.Instance).filter_by(
            uuid=data.INSTANCE_A).update(
            {'project_id': keystone.member.project_id})


@pytest.fixture
def api_url(conf, seeded, keystone, scheduler):  # noqa: F811
    """memagg-api with keystonemiddleware checking tokens with the real
    Keystone, over the seeded database, served on a loopback port."""
    conf.config(auth_strategy='keystone', group='api')
    conf.register_opts(ks_loading.get_auth_plugin_conf_options('password'),
                       group='keystone_authtoken')
    conf.config(group='keystone_authtoken', **keystone.authtoken_options())
    with live.serving(api_app.create_app(CONF)) as url:
        yield url


OBJECTS = {'instances': data.INSTANCE_A, 'grants': data.GRANT,
           'audits': data.AUDIT, 'migrations': data.MIGRATION}


def _url(route):
    """``route``'s path naming a seeded object (instance A: the member's
    project's)."""
    if not route.path_params:
        return route.path
    collection = route.path.split('/')[2]
    return route.path.format(uuid=OBJECTS.get(collection), name='host-1')


def _call(api_url, route, token):
    headers = dict(LATEST)
    if token:
        headers['X-Auth-Token'] = token
    return requests.request(
        route.method, api_url + _url(route), headers=headers, timeout=60,
        json=(BODIES.get(route.operation_id, {})
              if route.body is not None else None))


def _expected_status(route, outcome):
    if outcome == policy_matrix.UNAUTHENTICATED:
        return 401
    if outcome == policy_matrix.DENIED:
        return 403
    if outcome == policy_matrix.NOT_FOUND:
        return 404
    return ALLOWED_STATUS.get(route.operation_id,
                              route.status_at(microversion.MAX_VERSION))


def _instances_shown(body):
    """The instance or WSS sample bodies of an instances route's answer."""
    if 'instance' in body:
        return [body['instance']]
    return body.get('instances', body.get('wss_samples', []))


def _token_roles(keystone, token):
    """The role names Keystone puts in ``token`` (implied ones included)
    and the project it is scoped to."""
    resp = requests.get(keystone.auth_url + '/auth/tokens', timeout=30,
                        headers={'X-Auth-Token': keystone.token(
                            keystone.admin), 'X-Subject-Token': token})
    assert resp.status_code == 200, resp.text
    body = resp.json()['token']
    return {r['name'] for r in body['roles']}, body['project']['id']


def test_every_route_and_persona_as_the_rules_say(api_url, tokens,
                                                  keystone):
    enforcer = policy.make_enforcer(CONF)
    cells = policy_matrix.matrix(enforcer)
    # The personas the rules were evaluated for are the real tokens'.
    owners = set()
    for persona in policy_matrix.PERSONAS:
        if persona.roles is None:
            assert tokens[persona.name] is None
            continue
        roles, project = _token_roles(keystone, tokens[persona.name])
        assert roles == set(persona.roles), (persona, roles)
        if persona.project_id == policy_matrix.OWNER:
            owners.add(project)
        else:
            assert project != keystone.member.project_id, persona
    assert owners == {keystone.member.project_id}
    wrong = []
    listed = {}
    for route, outcomes in sorted(cells,
                                  key=lambda c: ORDER[c[0].method]):
        for persona, outcome in outcomes.items():
            response = _call(api_url, route, tokens[persona])
            expected = _expected_status(route, outcome)
            if response.status_code != expected:
                wrong.append('%s %s as %s: %d, the rules say %s (%d): %s'
                             % (route.method, route.path, persona,
                                response.status_code, outcome, expected,
                                response.text[:200]))
            elif route.path.startswith('/v1/instances') and response.ok:
                shown = _instances_shown(response.json())
                if route.operation_id == 'instances_list_instances':
                    listed[persona] = (outcome, {
                        i['project_id'] for i in shown})
                # Hosts: in every row for a persona the rules show them to,
                # in none for the others.
                hosts = {'host' in row for row in shown}
                want = 'hosts' not in outcome
                if shown and hosts != {want}:
                    wrong.append('%s %s as %s: host shown %s, the rules '
                                 'say %s' % (route.method, route.path,
                                             persona, hosts, outcome))
    assert not wrong, '\n'.join(wrong)
    # The instances listing: a persona allowed its own project only sees
    # that project's instances; one allowed all sees every project's.
    own = {'admin': keystone.admin.project_id,
           'project member': keystone.member.project_id,
           'project reader': keystone.member.project_id}
    for persona, (outcome, projects) in listed.items():
        if 'other projects' in outcome:
            assert projects <= {own.get(persona)}, (persona, projects)
        else:
            assert {keystone.member.project_id,
                    data.PROJECT_B} <= projects, (persona, projects)
    assert listed['project member'][1] == {keystone.member.project_id}
    assert listed['member of another project'][1] == set()
