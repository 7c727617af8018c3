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

"""The authorization matrix derived from the default rules: the personas'
rights, every route covered, the admin guide's table in step."""
import pathlib

from oslo_policy import policy as oslo_policy
import pytest

from memagg.api.controllers import base
from memagg.api import policies
from memagg.api import policy
from memagg.api import policy_matrix
from memagg.common import context
from memagg.conf import CONF

DOC = (pathlib.Path(__file__).resolve().parents[4] / 'doc' / 'source' /
       'admin' / 'policy-matrix.inc')
PERSONAS = [p.name for p in policy_matrix.PERSONAS]
INFRASTRUCTURE = ('/v1/services', '/v1/hosts', '/v1/host_usages',
                  '/v1/reservoir', '/v1/grants', '/v1/audits',
                  '/v1/migrations')


@pytest.fixture
def cells():
    return {(route.method, route.path): outcomes for route, outcomes in
            policy_matrix.matrix(policy.make_enforcer(CONF))}


def test_admin_guide_table_is_up_to_date():
    assert DOC.read_text() == policy_matrix.rst(), (
        'run: python -m memagg.api.policy_matrix > %s' % DOC)


def test_every_authenticated_route_has_a_documented_rule():
    rules = policy_matrix.route_rules()
    missing = ['%s %s' % (r.method, r.path) for r in base.ROUTES
               if not r.public and not rules.get((r.method, r.path))]
    assert not missing


def test_infrastructure_is_for_the_admin_alone(cells):
    infra = {key: outcomes for key, outcomes in cells.items()
             if key[1].startswith(INFRASTRUCTURE)}
    assert len(infra) >= 15
    for key, outcomes in infra.items():
        assert outcomes == {
            'admin': policy_matrix.ALLOWED,
            'project member': policy_matrix.DENIED,
            'project reader': policy_matrix.DENIED,
            'member of another project': policy_matrix.DENIED,
            'no token': policy_matrix.UNAUTHENTICATED}, key


@pytest.mark.parametrize('path', ['/v1/instances/{uuid}',
                                  '/v1/instances/{uuid}/wss'])
def test_project_readers_and_members_read_their_own_instances(cells, path):
    no_host = policy_matrix.without('hosts')
    assert cells[('GET', path)] == {
        'admin': policy_matrix.ALLOWED,
        'project member': no_host,
        'project reader': no_host,
        'member of another project': policy_matrix.NOT_FOUND,
        'no token': policy_matrix.UNAUTHENTICATED}


def test_listing_is_scoped_to_the_callers_project(cells):
    own = policy_matrix.without('other projects', 'hosts')
    assert cells[('GET', '/v1/instances')] == {
        'admin': policy_matrix.ALLOWED,
        'project member': own,
        'project reader': own,
        'member of another project': own,
        'no token': policy_matrix.UNAUTHENTICATED}


def test_every_widening_rule_says_what_it_adds():
    for rules in policy_matrix.route_rules().values():
        for rule in rules[1:]:
            assert rule in policy_matrix.WIDENS, rule


def _enforce(enforcer, rule, project, roles, owner):
    ctx = context.RequestContext(project_id=project, roles=roles)
    return enforcer.authorize(rule, {'project_id': owner}, ctx,
                              do_raise=False)


def test_old_defaults_are_deprecated_aliases():
    by_name = {rule.name: rule for rule in policies.list_rules()}
    for name, old in (('memagg:instance:get', 'rule:admin_or_owner'),
                      ('memagg:instance:wss', 'rule:admin_or_owner'),
                      ('memagg:instance:list', 'rule:project_member')):
        deprecated = by_name[name].deprecated_rule
        assert isinstance(deprecated, oslo_policy.DeprecatedRule)
        assert deprecated.check_str == old
        assert deprecated.deprecated_reason and deprecated.deprecated_since
    for name in ('admin_or_owner', 'project_member'):
        assert by_name[name].deprecated_for_removal


def test_old_defaults_apply_only_when_new_defaults_are_not_enforced(conf):
    """A user with a role outside the personas on the owning project: the
    old admin_or_owner let it in, the new default does not."""
    new = policy.make_enforcer(CONF)
    assert not _enforce(new, 'memagg:instance:get', 'p', ['observer'], 'p')
    assert _enforce(new, 'memagg:instance:get', 'p', ['reader'], 'p')
    conf.config(enforce_new_defaults=False, group='oslo_policy')
    old = policy.make_enforcer(CONF)
    assert _enforce(old, 'memagg:instance:get', 'p', ['observer'], 'p')
    assert not _enforce(old, 'memagg:instance:get', 'p', ['observer'], 'q')


def test_member_reads_without_the_implied_reader_role():
    """A token with member but not reader (noauth, or a cloud without
    Keystone's role implications) is still the member persona."""
    enforcer = policy.make_enforcer(CONF)
    for rule in ('memagg:instance:get', 'memagg:instance:wss',
                 'memagg:instance:list'):
        assert _enforce(enforcer, rule, 'p', ['member'], 'p')
        assert not _enforce(enforcer, rule, 'p', ['member'], 'q')
