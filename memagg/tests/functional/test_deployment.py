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

"""The shared ``deployment``: memagg found through Keystone's catalog, and
each caller served what its token's roles and project allow."""
from keystoneauth1 import adapter
import pytest

pytestmark = [pytest.mark.functional, pytest.mark.slow]


def _api(deployment, account):
    return adapter.Adapter(deployment.keystone.session(account),
                           service_type='memory-aggregation',
                           interface='public', region_name='RegionOne')


def _instances(api):
    resp = api.get('/v1/instances', raise_exc=False)
    assert resp.status_code == 200, resp.text
    return {vm['uuid'] for vm in resp.json()['instances']}


def test_catalog_leads_to_the_api(deployment):
    api = _api(deployment, deployment.keystone.admin)
    assert api.get_endpoint().rstrip('/') == deployment.url
    resp = api.get('/v1/hosts', raise_exc=False)
    assert resp.status_code == 200, resp.text
    assert {h['name'] for h in resp.json()['hosts']} >= set(deployment.hosts)


def test_admin_sees_every_project_member_and_reader_their_own(deployment):
    seeded = deployment.instances
    ks = deployment.keystone
    assert _instances(_api(deployment, ks.admin)) >= set(
        seeded['admin'] + seeded['member'])
    for account in (ks.member, ks.reader):
        assert _instances(_api(deployment, account)) == set(seeded['member'])


def test_member_may_not_list_hosts(deployment):
    resp = _api(deployment, deployment.keystone.member).get(
        '/v1/hosts', raise_exc=False)
    assert resp.status_code == 403, resp.text
    assert resp.json()['errors'][0]['status'] == 403
