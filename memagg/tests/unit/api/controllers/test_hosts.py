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

"""GET /v1/hosts and /v1/hosts/{name}, and POST /v1/hosts/{name}/reclaim
(microversion 1.3) through a real scheduler manager on the fake RPC driver
(memagg-compute stood in for at its RPC client)."""
from memagg.api import microversion
from memagg.common import context
from memagg.db import grants as db_grants
from memagg.tests.unit.api import data
from memagg.tests import polling

V13 = {microversion.HEADER: 'memory-aggregation 1.3'}


def _post(api, path, body, headers=V13):
    return api.post(path, headers=headers, json=body)


def test_hosts(api):
    hosts = api.get('/v1/hosts?sort_key=memory_mb&sort_dir=desc').json
    assert [h['name'] for h in hosts['hosts']] == ['host-1', 'host-2']
    host = api.get('/v1/hosts/host-2').json['host']
    assert host['memory_mb'] == 32768 and host['reported_at'].endswith('Z')
    assert api.get('/v1/hosts/nowhere').status_code == 404


def _slab_statuses(uuid):
    return [s.status for s in db_grants.grant_get(
        context.get_admin_context(), uuid).slabs]


def test_reclaim_answers_with_the_memory_it_took(api, scheduler):
    made = _post(api, '/v1/grants', {'instance_uuid': data.INSTANCE_A,
                                     'size_mb': 256}).json['grant']

    response = _post(api, '/v1/hosts/host-2/reclaim', {'size_mb': 100})

    assert response.status_code == 200
    assert response.json == {'reclaimed_mb': 128}
    polling.wait_for(lambda: _slab_statuses(made['uuid']) == [
        'active', 'active', 'reclaimed', 'reclaimed'], 10,
        message='two slabs reclaimed')
    assert len(scheduler.holding('host-2')) == 2
    latest = _post(api, '/v1/hosts/host-2/reclaim', {'size_mb': 64},
                   headers={microversion.HEADER: 'memory-aggregation 1.9'})
    assert latest.json == {'reclaimed_mb': 64, 'slabs': [
        {'grant_uuid': made['uuid'], 'index': 1}]}
    assert _post(api, '/v1/hosts/host-1/reclaim',
                 {'size_mb': 100}).json == {'reclaimed_mb': 0}
    assert _post(api, '/v1/hosts/nowhere/reclaim',
                 {'size_mb': 1}).status_code == 404
    bad = _post(api, '/v1/hosts/host-2/reclaim', {'size_mb': -1})
    assert bad.status_code == 400 and bad.json['errors'][0]['field'] == \
        'size_mb'
