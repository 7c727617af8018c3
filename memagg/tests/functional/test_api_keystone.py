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

"""memagg's API with auth_strategy = keystone against a real Keystone.

The API runs in a real HTTP server over a migrated SQLite database; its
keystonemiddleware validates every token with the Keystone process of the
``keystone`` fixture, as the service user ``memagg``. So the roles and
project each test's token carries come from Keystone itself.
"""
import threading
import uuid

from keystoneauth1 import loading as ks_loading
import pytest
import requests

from memagg.api import app as api_app
from memagg.api import server as api_server
from memagg.common import context as memagg_context
from memagg.conf import CONF
from memagg.db import reports as db_reports

pytestmark = [pytest.mark.functional, pytest.mark.slow]


HOST = 'kvm-1'


class Api:
    """The API's base URL, and GETs with a given token (or none)."""

    def __init__(self, url):
        self.url = url

    def get(self, path, token=None):
        headers = {'X-Auth-Token': token} if token else {}
        return requests.get(self.url + path, headers=headers, timeout=30)


@pytest.fixture
def instances(keystone, sqlite_db):
    """One instance of the admin's project and one of the member's, on one
    host; their UUIDs keyed 'admin' and 'member'."""
    owned = {'admin': str(uuid.uuid4()), 'member': str(uuid.uuid4())}
    db_reports.report_ingest(
        memagg_context.get_admin_context(),
        dict(name=HOST, memory_mb=65536, vcpus=16),
        [dict(uuid=owned[who], name='vm-' + who, booked_mb=4096,
              current_mb=2048,
              project_id=getattr(keystone, who).project_id)
         for who in owned], [])
    return owned


@pytest.fixture
def api(conf, keystone, instances):
    """memagg's API with keystonemiddleware pointed at the real Keystone,
    served on a free loopback port for the test's duration."""
    conf.config(auth_strategy='keystone', group='api')
    # The password plugin's options exist only once keystonemiddleware loads
    # the plugin; register them so the test can set them.
    conf.register_opts(ks_loading.get_auth_plugin_conf_options('password'),
                       group='keystone_authtoken')
    conf.config(group='keystone_authtoken', **keystone.authtoken_options())
    server = api_server.make_server(api_app.create_app(CONF), '127.0.0.1', 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield Api(api_server.url(server))
    server.shutdown()
    thread.join(timeout=10)


def _error(resp, status):
    assert resp.status_code == status, resp.text
    assert resp.headers['Content-Type'].startswith('application/json')
    error = resp.json()['errors'][0]
    assert error['status'] == status
    return error


def test_no_token_is_401_json_naming_keystone(api, keystone):
    resp = api.get('/v1/hosts')
    error = _error(resp, 401)
    assert 'authentication' in error['detail']
    # keystonemiddleware tells the client where to get a token.
    assert keystone.auth_url in resp.headers['WWW-Authenticate']


def test_invalid_token_is_401(api):
    _error(api.get('/v1/hosts', token='not-a-token-' + uuid.uuid4().hex),
           401)


def test_revoked_token_is_401(api, keystone):
    token = keystone.token(keystone.member)
    admin = keystone.token(keystone.admin)
    resp = requests.delete(keystone.auth_url + '/auth/tokens', timeout=30,
                           headers={'X-Auth-Token': admin,
                                    'X-Subject-Token': token})
    assert resp.status_code == 204, resp.text
    _error(api.get('/v1/hosts', token=token), 401)


def test_admin_token_lists_hosts(api, keystone):
    resp = api.get('/v1/hosts', token=keystone.token(keystone.admin))
    assert resp.status_code == 200, resp.text
    assert [h['name'] for h in resp.json()['hosts']] == [HOST]


def test_member_of_other_project_may_not_list_hosts(api, keystone):
    _error(api.get('/v1/hosts', token=keystone.token(keystone.member)), 403)


def test_another_projects_instance_is_not_found(api, keystone, instances):
    """As a missing one: the answer does not tell that it exists."""
    token = keystone.token(keystone.member)
    for path in ('', '/wss'):
        other = api.get('/v1/instances/' + instances['admin'] + path,
                        token=token)
        missing = api.get('/v1/instances/%s%s' % (uuid.uuid4(), path),
                          token=token)
        seen, expected = _error(other, 404), _error(missing, 404)
        assert seen['code'] == expected['code']
        assert seen['title'] == expected['title']


def test_only_admins_see_hosts(api, keystone, instances):
    member = api.get('/v1/instances', token=keystone.token(keystone.member))
    admin = api.get('/v1/instances', token=keystone.token(keystone.admin))
    assert member.status_code == admin.status_code == 200
    assert all('host' not in i for i in member.json()['instances'])
    assert all(i['host'] == HOST for i in admin.json()['instances'])
    _error(api.get('/v1/instances?host=' + HOST,
                   token=keystone.token(keystone.member)), 403)


def test_member_reads_own_projects_instance(api, keystone, instances):
    resp = api.get('/v1/instances/' + instances['member'],
                   token=keystone.token(keystone.member))
    assert resp.status_code == 200, resp.text
    body = resp.json()['instance']
    assert body['uuid'] == instances['member']
    assert body['project_id'] == keystone.member.project_id


def test_member_lists_only_own_projects_instances(api, keystone, instances):
    resp = api.get('/v1/instances', token=keystone.token(keystone.member))
    assert resp.status_code == 200, resp.text
    assert ([i['uuid'] for i in resp.json()['instances']]
            == [instances['member']])


def test_admin_lists_every_projects_instances(api, keystone, instances):
    resp = api.get('/v1/instances', token=keystone.token(keystone.admin))
    assert resp.status_code == 200, resp.text
    assert (sorted(i['uuid'] for i in resp.json()['instances'])
            == sorted(instances.values()))
