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

"""Authentication: keystonemiddleware in front of all but discovery."""
import pytest

from memagg.api import app as api_app
from memagg.conf import CONF
from memagg.tests.unit.api import conftest


@pytest.fixture
def keystone_api(conf, sqlite_db):
    """The API with auth_strategy keystone; no Keystone is needed because
    requests without a token are rejected before any is contacted."""
    conf.config(auth_strategy='keystone', group='api')
    conf.config(www_authenticate_uri='http://127.0.0.1:5000/v3',
                group='keystone_authtoken')
    return conftest.Client(api_app.create_app(CONF))


def test_no_token_is_401_in_memagg_json(keystone_api):
    response = keystone_api.get('/v1/instances', headers={
        'X-Project-Id': 'admin', 'X-Roles': 'admin'})
    assert response.status_code == 401
    (error,) = response.json['errors']
    assert error['status'] == 401
    assert 'authentication' in error['detail']
    assert error['request_id'] == response.headers['x-openstack-request-id']
    assert 'http://127.0.0.1:5000/v3' in response.headers['WWW-Authenticate']


@pytest.mark.parametrize('path', ['/', '/v1/', '/v1/openapi.json'])
def test_discovery_needs_no_token(keystone_api, path):
    assert keystone_api.get(path).status_code == 200


def test_unknown_path_is_401_before_404(keystone_api):
    # Without a token nothing about the API's routes is revealed.
    assert keystone_api.get('/v1/nothing').status_code == 401


def test_noauth_headers_cannot_bypass_keystone(keystone_api):
    response = keystone_api.get('/v1/hosts', headers={
        'X-Identity-Status': 'Confirmed', 'X-Roles': 'admin'})
    assert response.status_code == 401


def test_noauth_default_is_admin(api):
    assert api.get('/v1/hosts').status_code == 200
    assert api.as_('someone', 'member', '/v1/hosts').status_code == 403
