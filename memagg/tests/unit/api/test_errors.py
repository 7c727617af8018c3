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

"""Bad input and faults: a JSON error body and the right status, always."""
import pytest

from memagg.api import app as api_app
from memagg.api import microversion
from memagg.conf import CONF
from memagg.db import facade as db_facade
from memagg.db import grants as db_grants
from memagg.tests.unit.api import conftest
from memagg.tests.unit.api import data


def _error(response, status):
    assert response.status_code == status
    assert response.content_type == 'application/json'
    (error,) = response.json['errors']
    assert error['status'] == status
    assert error['request_id'] == response.headers['x-openstack-request-id']
    return error


@pytest.mark.parametrize('path, field, fragment', [
    ('/v1/instances?limit=0', 'limit', 'from 1 to 1000'),
    ('/v1/instances?limit=1001', 'limit', 'from 1 to 1000'),
    ('/v1/instances?limit=many', 'limit', 'whole number'),
    ('/v1/instances?sort_key=secret', 'sort_key', 'give one of'),
    ('/v1/instances?sort_dir=sideways', 'sort_dir', 'asc, desc'),
    ('/v1/instances?flavour=big', 'flavour', 'accepts:'),
    ('/v1/instances?marker=not-a-uuid', 'marker', 'UUID'),
    ('/v1/instances?marker=' + data.MISSING, 'marker', 'previous page'),
    ('/v1/instances?limit=1&limit=2', 'limit', 'give it once'),
    ('/v1/services?disabled=perhaps', 'disabled', 'true or false'),
    ('/v1/services?marker=abc', 'marker', 'whole number'),
    ('/v1/grants?instance_uuid=42', 'instance_uuid', 'UUID'),
    ('/v1/audits?since=last-week', 'since', 'ISO 8601'),
    ('/v1/migrations?until=2024-13-45', 'until', 'ISO 8601'),
    ('/v1/instances/%s/wss?until=noon' % data.INSTANCE_A, 'until',
     'ISO 8601'),
    ('/v1/reservoir?limit=1', 'limit', 'accepts: none'),
    ('/v1/instances/not-a-uuid', 'uuid', 'UUID'),
    ('/v1/grants/123', 'uuid', 'UUID'),
])
def test_bad_query_is_400_naming_field_and_fix(api, path, field, fragment):
    error = _error(api.get(path), 400)
    assert error['field'] == field
    assert fragment in error['detail']
    assert field in error['detail']


@pytest.mark.parametrize('path', [
    '/v1/nothing', '/v2/instances', '/v1/instances/%s' % data.MISSING,
    '/v1/grants/%s' % data.MISSING, '/v1/audits/%s' % data.MISSING,
    '/v1/hosts/no-such-host'])
def test_unknown_route_or_resource_is_404(api, path):
    _error(api.get(path), 404)


@pytest.mark.parametrize('method', ['post', 'put', 'delete', 'patch'])
def test_other_methods_are_405(api, method):
    response = getattr(api, method)('/v1/instances')
    error = _error(response, 405)
    assert 'GET' in response.headers['Allow']
    assert 'use GET' in error['detail']


@pytest.mark.parametrize('value, status', [
    ('memory-aggregation 1.99', 406), ('memory-aggregation 2.0', 406),
    ('memory-aggregation one', 400), ('memory-aggregation', 400)])
def test_bad_microversion(api, value, status):
    error = _error(api.get('/v1/hosts',
                           headers={microversion.HEADER: value}), status)
    assert error['field'] == microversion.HEADER


def test_unexpected_failure_is_500_without_traceback(api, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError('internal detail 0xdeadbeef')
    monkeypatch.setattr(db_grants, 'reservoir_summary', broken)
    error = _error(api.get('/v1/reservoir'), 500)
    assert 'deadbeef' not in error['detail']
    assert 'Traceback' not in error['detail']


def test_unreachable_database_is_503_with_retry_after(conf, api):
    conf.config(db_retry_after=17, group='api')
    conf.config(connection='mysql+pymysql://root@127.0.0.1:9/none',
                max_retries=0, group='database')
    db_facade.dispose()
    client = conftest.Client(api_app.create_app(CONF))
    response = client.get('/v1/instances')
    error = _error(response, 503)
    assert response.headers['Retry-After'] == '17'
    assert 'database' in error['detail']
    db_facade.dispose()


def test_another_projects_marker_is_as_unknown_as_a_missing_one(api):
    """A marker is looked up within the page's own scope: project-a's
    reader learns nothing of project-b's instance through it."""
    def error(marker):
        found = _error(api.as_(data.PROJECT_A, 'reader',
                               '/v1/instances?marker=' + marker), 400)
        return (found['code'], found['field'],
                found['detail'].replace(marker, 'MARKER'))

    assert error(data.INSTANCE_B) == error(data.MISSING)
    assert error(data.INSTANCE_B)[0] == 'memagg.marker_not_found'
    # Its own instance is a marker as before.
    page = api.as_(data.PROJECT_A, 'reader',
                   '/v1/instances?marker=' + data.INSTANCE_A)
    assert page.status_code == 200, page.json
