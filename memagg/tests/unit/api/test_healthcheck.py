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

"""/healthcheck: oslo.middleware's healthcheck, answered without a token
and in its own format (not memagg's JSON errors)."""
from oslo_middleware.healthcheck import opts as healthcheck_opts
import pytest

from memagg.api import app as api_app
from memagg.conf import CONF
from memagg.tests.unit.api import conftest


@pytest.fixture
def keystone_api(conf, sqlite_db):
    """The API with [api] auth_strategy = keystone, which nothing here can
    authenticate against: only what needs no token answers."""
    conf.config(auth_strategy='keystone', group='api')
    conf.config(www_authenticate_uri='http://keystone.invalid/v3',
                group='keystone_authtoken')
    return conftest.Client(api_app.create_app(CONF))


def test_healthcheck_needs_no_token(keystone_api):
    response = keystone_api.get('/healthcheck')
    assert response.status_code == 200
    assert response.content_type.startswith('text/plain')
    # No backends configured: healthy, and nothing to report.
    assert response.get_data(as_text=True) == ''
    assert response.headers['x-openstack-request-id'].startswith('req-')
    # Everything else but version discovery still does.
    assert keystone_api.get('/v1/hosts').status_code == 401


def test_healthcheck_json_and_head(api):
    response = api.get('/healthcheck', headers={'Accept': 'application/json'})
    assert response.status_code == 200
    assert response.get_json() == {'detailed': False, 'reasons': []}
    assert api.head('/healthcheck').status_code == 204


def test_healthcheck_disabled_by_file_is_503_in_its_own_format(
        conf, sqlite_db, tmp_path):
    flag = tmp_path / 'healthcheck_disable'
    conf.config(auth_strategy='noauth', group='api')
    # The middleware and its backend register these on CONF when built;
    # registered first, they can be set before the app reads them.
    CONF.register_opts(healthcheck_opts.HEALTHCHECK_OPTS +
                       healthcheck_opts.DISABLE_BY_FILE_OPTS,
                       group='healthcheck')
    conf.config(backends=['disable_by_file'], group='healthcheck')
    conf.config(disable_by_file_path=str(flag), group='healthcheck')
    client = conftest.Client(api_app.create_app(CONF))
    assert client.get('/healthcheck').status_code == 200
    flag.touch()
    response = client.get('/healthcheck')
    assert response.status_code == 503
    assert response.get_data(as_text=True) == 'DISABLED BY FILE'


def test_only_the_exact_path(api):
    response = api.get('/healthcheck/more')
    assert response.status_code == 404
    assert response.get_json()['errors'][0]['status'] == 404
