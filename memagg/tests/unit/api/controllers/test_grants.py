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

"""POST /v1/grants and DELETE /v1/grants/{uuid} (microversion 1.3; POST
/v1/grants answers at once from 1.10), through the WSGI app and a real
scheduler manager on the fake RPC driver (memagg-compute stood in for
at its RPC client); the grant's secret and slab keys are never shown."""
import pytest

from memagg.api import microversion
from memagg.common import context
from memagg.common import exceptions
from memagg.db import grants as db_grants
from memagg.db import listings as db_listings
from memagg.scheduler import rpcapi
from memagg.tests.unit.api import data
from memagg.tests import polling

V13 = {microversion.HEADER: 'memory-aggregation 1.3'}
V110 = {microversion.HEADER: 'memory-aggregation 1.10'}


def _post(api, path, body, headers=V13):
    return api.post(path, headers=headers, json=body)


def test_a_grant_is_made_and_shown_without_its_secret(api, scheduler):
    response = _post(api, '/v1/grants', {'instance_uuid': data.INSTANCE_A,
                                         'size_mb': 200})

    assert response.status_code == 201, response.json
    grant = response.json['grant']
    assert (grant['instance_uuid'], grant['consumer_host'],
            grant['requested_mb'], grant['granted_mb'], grant['status'],
            grant['partial'], grant['reason'], grant['slab_size_mb']) == (
        data.INSTANCE_A, 'host-1', 200, 256, 'active', False, None, 64)
    assert [(s['index'], s['donor_host'], s['endpoint'], s['status'])
            for s in grant['slabs']] == [
        (i, 'host-2', 'tcp://host-2:7450', 'active') for i in range(4)]
    text = response.get_data(as_text=True)
    secret = db_grants.grant_get(context.get_admin_context(),
                                 grant['uuid']).secret
    assert secret not in text
    assert 'secret' not in text and 'rkey' not in text
    assert 'remote_addr' not in text
    assert len(scheduler.holding('host-2')) == 4


def test_a_request_past_the_cap_is_partial_with_the_reason(api, scheduler):
    # INSTANCE_A: booked 4096, cap 2048, 512 already granted.
    response = _post(api, '/v1/grants', {'instance_uuid': data.INSTANCE_A,
                                         'size_mb': 2048})

    assert response.status_code == 201
    grant = response.json['grant']
    assert (grant['granted_mb'], grant['partial']) == (1536, True)
    assert 'max_remote_ratio' in grant['reason']


@pytest.mark.parametrize('body, field, detail', [
    ({'instance_uuid': data.INSTANCE_A}, 'size_mb',
     'required field missing'),
    ({'size_mb': 64}, 'instance_uuid', 'required field missing'),
    ({'instance_uuid': data.INSTANCE_A, 'size_mb': 0}, 'size_mb',
     'give a value from 1 to'),
    ({'instance_uuid': data.INSTANCE_A, 'size_mb': '64'}, 'size_mb',
     'give a whole number'),
    ({'instance_uuid': 'vm-1', 'size_mb': 64}, 'instance_uuid',
     'give a UUID'),
    ({'instance_uuid': data.INSTANCE_A, 'size_mb': 64, 'donor': 'x'},
     'donor', 'accepts: instance_uuid, size_mb'),
])
def test_a_bad_body_is_400_naming_the_field(api, scheduler, body, field,
                                            detail):
    response = _post(api, '/v1/grants', body)

    assert response.status_code == 400
    error = response.json['errors'][0]
    assert error['field'] == field
    assert detail in error['detail']
    assert scheduler.calls == []


_GRANT = ('{"instance_uuid": "%s", "size_mb": 64}' % data.INSTANCE_A).encode()
_JSON = {'Content-Type': 'application/json'}


@pytest.mark.parametrize('headers, raw, status, field, detail', [
    # Form posts and fetch() without a preflight send these.
    ({'Content-Type': 'text/plain'}, _GRANT, 415, 'Content-Type',
     "'text/plain': send the body as application/json"),
    ({}, _GRANT, 415, 'Content-Type', 'None: send the body as'),
    ({'Content-Type': 'application/json; charset=utf-16'},
     _GRANT.decode().encode('utf-16'), 415, 'Content-Type', 'utf-16'),
    (_JSON, b'[' * 33 + b']' * 33, 400, 'body',
     'nested deeper than 32 levels'),
    # Deeper than the parser's own recursion (a 500 before).
    (_JSON, b'[' * 5000 + b']' * 5000, 400, 'body',
     'nested deeper than 32 levels'),
    (_JSON, b'{"instance_uuid": "%s"}' % (b'x' * 114688), 413, 'body',
     'takes at most 114688 ([api] max_request_body_size)'),
])
def test_a_body_the_api_cannot_serve_is_refused_naming_why(
        api, scheduler, headers, raw, status, field, detail):
    response = api.post('/v1/grants', headers=dict(V13, **headers), data=raw)

    assert response.status_code == status, response.json
    error = response.json['errors'][0]
    assert (error['field'], error['status']) == (field, status)
    assert detail in error['detail']
    assert scheduler.calls == []


def test_json_in_utf8_is_accepted_by_name(api, scheduler):
    response = api.post('/v1/grants', data=_GRANT, headers=dict(
        V13, **{'Content-Type': 'application/json; charset=UTF-8'}))

    assert response.status_code == 201, response.json


def test_an_unknown_instance_is_404(api, scheduler):
    response = _post(api, '/v1/grants', {'instance_uuid': data.MISSING,
                                         'size_mb': 64})
    assert response.status_code == 404
    assert data.MISSING in response.json['errors'][0]['detail']


def test_nothing_grantable_is_409_with_the_reason(api, conf, scheduler):
    conf.config(max_remote_ratio=0.0, group='reservoir')

    response = _post(api, '/v1/grants', {'instance_uuid': data.INSTANCE_B,
                                         'size_mb': 64})

    assert response.status_code == 409
    error = response.json['errors'][0]
    assert error['code'] == 'memagg.remote_memory_unavailable'
    assert error['detail'].startswith('No remote memory can be granted: ')
    assert 'max_remote_ratio' in error['detail']
    assert [g.instance_uuid for g in db_listings.list_resources(
        context.get_admin_context(),
        'grants')] == [data.INSTANCE_A]


def _grant_status(uuid):
    return db_grants.grant_get(context.get_admin_context(), uuid).status


def test_release_answers_at_once_and_is_carried_out_once(api, scheduler):
    made = _post(api, '/v1/grants', {'instance_uuid': data.INSTANCE_B,
                                     'size_mb': 128}).json['grant']

    response = api.delete('/v1/grants/' + made['uuid'], headers=V13)

    assert response.status_code == 202
    assert response.json['grant']['status'] == 'releasing'
    polling.wait_for(lambda: _grant_status(made['uuid']) == 'released', 10,
                     message='the grant released')
    again = api.delete('/v1/grants/' + made['uuid'], headers=V13)
    assert again.status_code == 202
    grant = again.json['grant']
    assert grant['status'] == 'released'
    assert {s['status'] for s in grant['slabs']} == {'released'}
    assert scheduler.holding() == set()
    assert len(scheduler.called('reclaim_slabs')) == 1
    assert len(scheduler.called('free_slabs')) == 1
    assert api.delete('/v1/grants/' + data.MISSING,
                      headers=V13).status_code == 404


def test_a_pending_grant_is_409_naming_its_state(api, scheduler):
    made = _post(api, '/v1/grants', {'instance_uuid': data.INSTANCE_B,
                                     'size_mb': 128}).json['grant']
    db_grants.grant_compare_and_set(context.get_admin_context(),
                                    made['uuid'], 'active', 'pending')

    response = api.delete('/v1/grants/' + made['uuid'], headers=V13)

    assert response.status_code == 409
    assert 'grant %s is pending' % made['uuid'] in \
        response.json['errors'][0]['detail']
    assert scheduler.called('free_slabs') == []


def test_below_1_3_the_new_routes_do_not_exist(api, scheduler):
    old = {microversion.HEADER: 'memory-aggregation 1.2'}
    create = _post(api, '/v1/grants', {'instance_uuid': data.INSTANCE_A,
                                       'size_mb': 64}, headers=old)
    assert create.status_code == 405
    delete = api.delete('/v1/grants/' + data.GRANT, headers=old)
    assert delete.status_code == 405
    assert _post(api, '/v1/hosts/host-2/reclaim', {'size_mb': 64},
                 headers=old).status_code == 404
    assert scheduler.calls == []


def test_grant_fields_of_1_3(api):
    old = api.get('/v1/grants/' + data.GRANT).json['grant']
    new = api.get('/v1/grants/' + data.GRANT, headers=V13).json['grant']
    assert not {'partial', 'reason', 'slab_size_mb'} & set(old)
    assert 'endpoint' not in old['slabs'][0]
    assert (new['partial'], new['reason'], new['slab_size_mb']) == (
        False, None, 64)
    assert new['slabs'][0]['endpoint'] is None
    listed = api.get('/v1/grants', headers=V13).json['grants'][0]
    assert listed['partial'] is False


def test_from_1_14_a_grant_shows_its_ledger_per_tier(api, scheduler):
    def shown(version, uuid=data.GRANT):
        return api.get('/v1/grants/' + uuid, headers={
            microversion.HEADER: 'memory-aggregation ' + version}).json[
            'grant']

    assert 'statistics' not in shown('1.13')
    statistics = shown('1.14')['statistics']
    assert (statistics['host'], statistics['l1']['puts'],
            statistics['l1']['used'], statistics['l2']['used']) == (
        'host-1', 90112, 90112, 0)
    assert statistics['reported_at'].endswith('Z')
    # Not in the list, and null before the consumer's first report.
    assert 'statistics' not in api.get('/v1/grants', headers={
        microversion.HEADER: 'memory-aggregation 1.14'}).json['grants'][0]
    made = _post(api, '/v1/grants', {'instance_uuid': data.INSTANCE_A,
                                     'size_mb': 64}, headers={
        microversion.HEADER: 'memory-aggregation 1.14'}).json['grant']
    assert made['statistics'] is None
    assert shown('1.14', made['uuid'])['statistics'] is None


def test_an_unanswering_scheduler_is_503(api, conf, fake_rpc):
    conf.config(rpc_response_timeout=1)

    response = _post(api, '/v1/grants', {'instance_uuid': data.INSTANCE_A,
                                         'size_mb': 64})

    assert response.status_code == 503
    assert 'memagg-scheduler did not answer within 1 s to the grant ' \
        'request' in response.json['errors'][0]['detail']


def _set_up(uuid):
    """The grant once memagg-scheduler is done with it (not pending)."""
    grant = db_grants.grant_get(context.get_admin_context(), uuid)
    return grant if grant.status != 'pending' else None


def test_from_1_10_a_grant_is_answered_pending_then_set_up(api, scheduler):
    response = _post(api, '/v1/grants', {'instance_uuid': data.INSTANCE_A,
                                         'size_mb': 200}, headers=V110)

    assert response.status_code == 202, response.json
    made = response.json['grant']
    assert (made['status'], made['granted_mb'], made['partial']) == (
        'pending', 256, False)
    assert [(s['donor_host'], s['status']) for s in made['slabs']] == [
        ('host-2', 'pending')] * 4
    assert 'secret' not in response.get_data(as_text=True)
    grant = polling.wait_for(lambda: _set_up(made['uuid']), 10,
                             interval=0.05, message='the grant set up')
    assert grant.status == 'active'
    assert {s.status for s in grant.slabs} == {'active'}
    assert len(scheduler.holding('host-2')) == 4
    assert scheduler.called('attach_grant') == [('host-1', made['uuid'])]


def test_from_1_10_nothing_reservable_is_409_at_once(api, conf, scheduler):
    conf.config(max_remote_ratio=0.0, group='reservoir')

    response = _post(api, '/v1/grants', {'instance_uuid': data.INSTANCE_B,
                                         'size_mb': 64}, headers=V110)

    assert response.status_code == 409
    assert 'max_remote_ratio' in response.json['errors'][0]['detail']
    assert scheduler.called('prepare_slabs') == []
    assert [g.instance_uuid for g in db_listings.list_resources(
        context.get_admin_context(), 'grants')] == [data.INSTANCE_A]


def test_from_1_10_a_failed_set_up_is_kept_failed_with_the_reason(
        api, scheduler):
    scheduler.attach_fails.add('host-1')

    made = _post(api, '/v1/grants', {'instance_uuid': data.INSTANCE_A,
                                     'size_mb': 128},
                 headers=V110).json['grant']

    grant = polling.wait_for(lambda: _set_up(made['uuid']), 10,
                             interval=0.05, message='the set-up ended')
    assert grant.status == 'failed'
    assert grant.reason.startswith('host-1 could not attach it')
    assert scheduler.holding('host-2') == set()
    shown = api.get('/v1/grants/' + made['uuid'], headers=V110).json['grant']
    assert (shown['status'], shown['reason']) == ('failed', grant.reason)


def test_from_1_10_donors_that_prepare_nothing_fail_the_grant(
        api, conf, scheduler):
    # Without the local tier, which would take the slabs.
    conf.config(local_tier=False, group='reservoir')
    scheduler.behaviour['host-2'] = 'fail'

    made = _post(api, '/v1/grants', {'instance_uuid': data.INSTANCE_A,
                                     'size_mb': 128},
                 headers=V110).json['grant']

    grant = polling.wait_for(lambda: _set_up(made['uuid']), 10,
                             interval=0.05, message='the set-up ended')
    # No other donor to move the slabs to: the grant holds nothing.
    assert (grant.status, grant.granted_mb) == ('failed', 0)
    assert 'host-2 failed to prepare 2 slabs' in grant.reason
    assert scheduler.holding() == set()
    assert scheduler.called('attach_grant') == []


def test_from_1_10_an_unreachable_bus_is_503_and_reserves_nothing(
        api, monkeypatch, scheduler):
    def unreachable(self, ctxt, grant_uuid, retry=None):
        raise exceptions.ServiceUnavailable(reason='no bus')
    monkeypatch.setattr(rpcapi.SchedulerAPI, 'finish_allocation',
                        unreachable)

    response = _post(api, '/v1/grants', {'instance_uuid': data.INSTANCE_B,
                                         'size_mb': 64}, headers=V110)

    assert response.status_code == 503
    assert [g.instance_uuid for g in db_listings.list_resources(
        context.get_admin_context(), 'grants')] == [data.INSTANCE_A]


@pytest.mark.parametrize('headers', [V13, V110])
def test_observe_mode_grants_nothing_409(api, conf, scheduler, headers):
    conf.config(mode='observe', group='scheduler')

    response = _post(api, '/v1/grants', {'instance_uuid': data.INSTANCE_B,
                                         'size_mb': 64}, headers=headers)

    assert response.status_code == 409
    assert '[scheduler] mode = observe' in (
        response.json['errors'][0]['detail'])
    assert scheduler.called('prepare_slabs') == []
    assert [g.instance_uuid for g in db_listings.list_resources(
        context.get_admin_context(), 'grants')] == [data.INSTANCE_A]


def test_grant_never_shows_secret(api):
    listed = api.get('/v1/grants').get_data(as_text=True)
    shown = api.get('/v1/grants/' + data.GRANT)
    assert shown.status_code == 200
    assert [s['donor_host'] for s in shown.json['grant']['slabs']] == [
        'host-2', 'host-2']
    for text in (listed, shown.get_data(as_text=True)):
        assert data.GRANT_SECRET not in text and 'secret' not in text
