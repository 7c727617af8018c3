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

"""Policy: admin by default; an instance's project reads its own instance."""
import pytest

from memagg.api import app as api_app
from memagg.api.controllers import base
from memagg.api import microversion
from memagg.api import policies
from memagg.api import policy
from memagg.conf import CONF
from memagg.tests.unit.api import conftest
from memagg.tests.unit.api import data

MEMBER = 'member,reader'
LATEST = {microversion.HEADER: 'memory-aggregation latest'}


def test_member_lists_only_own_project(api):
    data.load_instances(3, project=data.PROJECT_B)
    listed = api.as_(data.PROJECT_A, MEMBER, '/v1/instances').json
    assert [i['uuid'] for i in listed['instances']] == [data.INSTANCE_A]
    admin = api.get('/v1/instances').json
    assert len(admin['instances']) == 5


def test_member_may_not_ask_for_another_project(api):
    response = api.as_(data.PROJECT_A, MEMBER,
                       '/v1/instances?project_id=' + data.PROJECT_B)
    assert response.status_code == 403
    assert 'all_projects' in response.json['errors'][0]['detail']
    own = api.as_(data.PROJECT_A, MEMBER,
                  '/v1/instances?project_id=' + data.PROJECT_A)
    assert own.status_code == 200


@pytest.mark.parametrize('path', ['/v1/instances/%s', '/v1/instances/%s/wss'])
def test_owner_reads_own_instance_only(api, path):
    assert api.as_(data.PROJECT_A, MEMBER,
                   path % data.INSTANCE_A).status_code == 200
    # Another project's is not found, as a missing one (as Nova answers).
    other = api.as_(data.PROJECT_A, MEMBER, path % data.INSTANCE_B).json
    missing = api.as_(data.PROJECT_A, MEMBER, path % data.MISSING).json
    assert [(e['status'], e['code'], e['detail'].replace(
        data.INSTANCE_B, 'X')) for e in other['errors']] == [
        (e['status'], e['code'], e['detail'].replace(data.MISSING, 'X'))
        for e in missing['errors']] == [
        (404, 'memagg.not_found', 'Instance X could not be found.')]
    assert api.get(path % data.INSTANCE_B).status_code == 200


def _concrete(route):
    """A URL of ``route`` naming an object of another project."""
    values = {'uuid': data.INSTANCE_B if 'instances' in route.path else
              {'grants': data.GRANT, 'audits': data.AUDIT,
               'migrations': data.MIGRATION}.get(route.path.split('/')[2]),
              'name': 'host-1'}
    return route.path.format(**values)


AUTHENTICATED = [r for r in base.ROUTES if not r.public]

# Valid bodies of the routes that need fields: a request is checked before
# its policy is.
BODIES = {
    'grants_create_grant': {'instance_uuid': data.INSTANCE_B,
                            'size_mb': 64},
    'hosts_reclaim_host': {'size_mb': 64},
    'migrations_create_migration': {'instance_uuid': data.INSTANCE_A,
                                    'dest_host': 'host-2'},
}


def _call(api, route, url, headers=None):
    return api.open(url, method=route.method,
                    headers=dict(LATEST, **(headers or {})),
                    json=BODIES.get(route.operation_id, {})
                    if route.body is not None else None)


@pytest.mark.parametrize('route', AUTHENTICATED,
                         ids=[r.operation_id for r in AUTHENTICATED])
def test_every_route_enforces_policy(api, scheduler, route):
    url = _concrete(route)
    # The sample audit has run already: an admin may ask, and is told it
    # cannot run again.
    expected = 409 if route.operation_id == 'audits_execute_audit' else \
        route.status_at(microversion.MAX_VERSION)
    assert _call(api, route, url).status_code == expected
    if route.path.startswith('/v1/instances'):
        # Open to a project's readers, scoped to their project (another
        # project's instance is 404): a caller without a role is denied.
        denied = _call(api, route, url, {'X-Project-Id': data.PROJECT_A,
                                         'X-Roles': 'nobody'})
    else:
        denied = _call(api, route, url, {'X-Project-Id': data.PROJECT_A,
                                         'X-Roles': MEMBER})
    assert denied.status_code == 403, url
    assert denied.json['errors'][0]['status'] == 403


def test_rules_are_documented_and_enforcer_loads_them():
    names = {rule.name for rule in policies.list_rules()}
    assert {'memagg:instance:get', 'memagg:reservoir:get',
            'memagg:grant:get', 'admin_api'} <= names
    enforcer = policy.make_enforcer(CONF)
    enforcer.load_rules()
    assert names <= set(enforcer.rules)


def test_operator_override_takes_effect(api, conf, tmp_path):
    policy_file = tmp_path / 'policy.yaml'
    policy_file.write_text('"memagg:host:list": "role:reader"\n')
    conf.config(policy_file=str(policy_file), group='oslo_policy')
    client = conftest.Client(api_app.create_app(CONF))
    assert client.as_('x', 'reader', '/v1/hosts').status_code == 200
    assert client.as_('x', 'reader', '/v1/hosts/host-1').status_code == 403
