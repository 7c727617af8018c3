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

"""memaggclient against the shared deployment: the endpoint found in
Keystone's catalog, a real token, and Keystone's and memagg's refusals as
typed exceptions."""
import pytest

from memagg.api import microversion as api_microversion
from memaggclient import client as memagg_client
from memaggclient import exceptions
from memaggclient import http
from memagg.demo import keystone as demo_keystone

pytestmark = [pytest.mark.functional, pytest.mark.slow]


def _client(deployment, account, **kwargs):
    return memagg_client.Client(deployment.keystone.session(account),
                                region_name=demo_keystone.REGION,
                                interface='public', **kwargs)


def test_the_catalog_endpoint_and_a_token_reach_memagg(deployment):
    admin = _client(deployment, deployment.keystone.admin)

    # The newest version both speak: the client's and the API's latest.
    assert admin.api_version == api_microversion.to_string(http.MAX_VERSION)
    assert http.MAX_VERSION == api_microversion.MAX_VERSION
    assert admin.http.endpoint.rstrip('/') == deployment.url
    assert set(deployment.hosts) <= {h['name']
                                     for h in admin.hosts.list().items}
    member = _client(deployment, deployment.keystone.member)
    assert sorted(i['uuid'] for i in member.instances.list().items) == sorted(
        deployment.instances['member'])


def test_policy_refusal_is_forbidden_with_the_request_id(deployment):
    member = _client(deployment, deployment.keystone.member)

    with pytest.raises(exceptions.Forbidden) as caught:
        member.grants.list()

    assert caught.value.request_id.startswith('req-')
    assert 'memagg:grant:list' in str(caught.value)


def test_a_region_without_memagg_is_endpoint_not_found(deployment):
    elsewhere = memagg_client.Client(
        deployment.keystone.session(deployment.keystone.admin),
        region_name='NoSuchRegion')

    with pytest.raises(exceptions.EndpointNotFound) as caught:
        elsewhere.hosts.list()

    assert 'memory-aggregation' in str(caught.value)


def test_bad_credentials_are_unauthorized(deployment):
    account = demo_keystone.Account(
        deployment.keystone.admin.username, 'wrong-password',
        deployment.keystone.admin.project_name)

    with pytest.raises(exceptions.Unauthorized) as caught:
        _client(deployment, account).hosts.list()

    assert caught.value.status_code == 401
