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

"""POST /v1/audits and POST /v1/audits/{uuid}/execute (microversion 1.2):
bodies checked field by field, audits stored and cast to memagg-scheduler
(a recording endpoint on oslo.messaging's fake driver)."""
import threading

import oslo_messaging as messaging
import pytest

from memagg.api import microversion
from memagg.common import context
from memagg.common import rpc
from memagg.db import audits as db_audits
from memagg.db import listings as db_listings
from memagg.db.sqlalchemy import models
from memagg.objects import base as objects_base
from memagg.tests.unit.api import data
from memagg.tests.unit.db import rows

V12 = {microversion.HEADER: 'memory-aggregation 1.2'}
RECOMMENDED = '66666666-6666-4666-8666-666666666666'


class _Scheduler:
    """What memagg-scheduler was asked over RPC."""

    target = messaging.Target(version='1.1')

    def __init__(self):
        self.calls = []
        self.called = threading.Event()

    @messaging.expose
    def run_audit(self, ctxt, audit_uuid):
        self.calls.append(('run_audit', audit_uuid))
        self.called.set()

    @messaging.expose
    def execute_audit(self, ctxt, audit_uuid):
        self.calls.append(('execute_audit', audit_uuid))
        self.called.set()


@pytest.fixture
def scheduler(conf, fake_rpc):
    endpoint = _Scheduler()
    server = rpc.get_server(
        conf.conf.scheduler.topic, 'ctl', [endpoint],
        serializer=objects_base.MemaggObjectSerializer())
    server.start()
    yield endpoint
    server.stop()
    server.wait()


def _post(api, path, body=None, headers=V12, **kwargs):
    return api.post(path, headers=headers, json=body, **kwargs)


def _audits():
    return db_listings.list_resources(context.get_admin_context(),
                                      'audits')


def test_an_audit_is_stored_pending_and_cast(api, scheduler):
    response = _post(api, '/v1/audits')

    assert response.status_code == 202
    audit = response.json['audit']
    assert (audit['state'], audit['memory_basis'], audit['auto_execute'],
            audit['parameters'], audit['actions'], audit['unplaced']) == (
        'pending', 'wss', False, None, [], None)
    assert scheduler.called.wait(10)
    assert scheduler.calls == [('run_audit', audit['uuid'])]
    assert api.get('/v1/audits/' + audit['uuid'], headers=V12).json[
        'audit']['state'] == 'pending'


def test_an_audit_keeps_its_basis_execution_and_parameters(api, scheduler):
    parameters = {'overload_cpu': 'threshold',
                  'overload_cpu_params': {'threshold': 0.7},
                  'underload_require': 'either', 'fill_headroom_cpu': 0.1}

    response = _post(api, '/v1/audits', {
        'memory_basis': 'booked', 'auto_execute': True,
        'parameters': parameters})

    assert response.status_code == 202
    stored = db_audits.audit_get(context.get_admin_context(),
                                 response.json['audit']['uuid'])
    assert (stored.memory_basis, stored.auto_execute, stored.parameters) \
        == ('booked', True, parameters)


@pytest.mark.parametrize('body, field, detail', [
    ({'memory_basis': 'rss'}, 'memory_basis', 'give one of wss, booked'),
    ({'auto_execute': 'yes'}, 'auto_execute', 'give true or false'),
    ({'colour': 'red'}, 'colour',
     'unknown field; this request accepts: auto_execute, memory_basis, '
     'parameters'),
    ({'parameters': {'threshold': 0.5}}, 'parameters.threshold',
     'unknown field; parameters accepts: fill_headroom_cpu, '
     'fill_headroom_mem, fill_window, '),
    ({'parameters': {'fill_headroom_cpu': 2}},
     'parameters.fill_headroom_cpu', 'got 2: give a value from 0.0 to 1.0'),
    ({'parameters': {'fill_window': 1.5}}, 'parameters.fill_window',
     'got 1.5: give a whole number'),
    ({'parameters': {'overload_cpu_params': '{}'}},
     'parameters.overload_cpu_params', 'give a JSON object'),
    ({'parameters': {'overload_cpu': 'nosuch'}}, 'parameters.overload_cpu',
     'mhod'),
    ({'parameters': {'overload_cpu': 'threshold',
                     'overload_cpu_params': {'threshold': 2}}},
     'parameters.overload_cpu_params.threshold', 'between 0 and 1'),
    ({'parameters': {'overload_cpu_params': {'bogus': 1}}},
     'parameters.overload_cpu_params.bogus', 'unknown parameter'),
    ({'parameters': {'underload_mem': 'threshold',
                     'underload_mem_params': {'threshold': -1}}},
     'parameters.underload_mem_params.threshold', 'between 0 and 1'),
    ({'memory_basis': 'wss',
      'parameters': {'placement_params': {'memory_basis': 'booked'}}},
     'parameters.placement_params.memory_basis', 'contradicts'),

    # vm_selection and placement name both an option and a family.
    ({'parameters': {'vm_selection': 'random',
                     'vm_selection_params': {'bogus': 1}}},
     'parameters.vm_selection_params.bogus', 'unknown parameter'),
    ({'parameters': {'placement_params': {'bogus': 1}}},
     'parameters.placement_params.bogus', 'unknown parameter'),
    ({'parameters': {'overload_cpu': ''}}, 'parameters.overload_cpu',
     "got '': give at least 1 character(s)"),
    ({'parameters': {'migration_cooldown': 100000000000}},
     'parameters.migration_cooldown', 'give a value from 0 to 31536000'),
])
def test_a_bad_body_is_400_naming_the_field(api, scheduler, body, field,
                                            detail):
    response = _post(api, '/v1/audits', body)

    assert response.status_code == 400, response.json
    error = response.json['errors'][0]
    assert error['field'] == field
    assert detail in error['detail']
    assert len(_audits()) == 1
    assert scheduler.calls == []


@pytest.mark.parametrize('raw, detail', [
    (b'{"memory_basis": ', 'not valid JSON'),
    (b'[1, 2]', 'got list: send a JSON object'),
])
def test_a_body_that_is_no_object_is_400(api, scheduler, raw, detail):
    response = api.post('/v1/audits', headers=dict(
        V12, **{'Content-Type': 'application/json'}), data=raw)

    assert response.status_code == 400
    assert response.json['errors'][0]['field'] == 'body'
    assert detail in response.json['errors'][0]['detail']


def test_below_1_2_the_new_routes_do_not_exist(api, scheduler):
    create = _post(api, '/v1/audits', headers={})
    assert create.status_code == 405
    assert create.headers['Allow'] == 'GET, HEAD, OPTIONS'
    execute = _post(api, '/v1/audits/%s/execute' % data.AUDIT, headers={
        microversion.HEADER: 'memory-aggregation 1.1'})
    assert execute.status_code == 404
    assert execute.json['errors'][0]['status'] == 404
    assert len(_audits()) == 1


def test_audit_fields_of_1_2(api):
    old = api.get('/v1/audits/' + data.AUDIT).json['audit']
    new = api.get('/v1/audits/' + data.AUDIT, headers=V12).json['audit']
    assert 'auto_execute' not in old and 'unplaced' not in old
    assert (new['auto_execute'], new['unplaced']) == (False, None)
    listed = api.get('/v1/audits', headers=V12).json['audits'][0]
    assert listed['auto_execute'] is False


def test_a_recommended_audit_is_cast_for_execution(api, scheduler):
    rows.insert(models.Audit, dict(uuid=RECOMMENDED, state='recommended'))

    response = _post(api, '/v1/audits/%s/execute' % RECOMMENDED)
    again = _post(api, '/v1/audits/%s/execute' % RECOMMENDED)

    assert response.status_code == 202
    # Moved on by the API: a second request is refused, not cast again.
    assert response.json['audit']['state'] == 'executing'
    assert again.status_code == 409
    assert 'audit %s is executing' % RECOMMENDED in \
        again.json['errors'][0]['detail']
    assert scheduler.called.wait(10)
    assert scheduler.calls == [('execute_audit', RECOMMENDED)]


@pytest.mark.parametrize('uuid, status, detail', [
    (data.AUDIT, 409, 'audit %s is succeeded: only a recommended audit can '
                      'be executed' % data.AUDIT),
    (data.MISSING, 404, 'could not be found'),
    ('not-a-uuid', 400, 'give a UUID'),
])
def test_only_a_recommended_audit_can_be_executed(api, scheduler, uuid,
                                                  status, detail):
    response = _post(api, '/v1/audits/%s/execute' % uuid)

    assert response.status_code == status
    assert detail in response.json['errors'][0]['detail']
    assert scheduler.calls == []


def test_execute_takes_no_body_fields(api, scheduler):
    rows.insert(models.Audit, dict(uuid=RECOMMENDED, state='recommended'))

    response = _post(api, '/v1/audits/%s/execute' % RECOMMENDED,
                     {'force': True})

    assert response.status_code == 400
    assert response.json['errors'][0]['field'] == 'force'


def test_an_unreachable_bus_is_503_and_fails_the_audit(unreachable_bus_api,
                                                       unreachable_bus):
    # The cast's bounded retries end: the API answers instead of hanging.
    response = _post(unreachable_bus_api, '/v1/audits')

    assert response.status_code == 503
    # The driver waited between its attempts, seconds in all, not forever.
    assert 0 < sum(unreachable_bus) < 30
    assert 'memagg-scheduler could not be reached' in \
        response.json['errors'][0]['detail']
    (failed,) = [a for a in _audits() if a.uuid != data.AUDIT]
    assert failed.state == 'failed'
    assert 'could not be reached' in failed.reason


def test_observe_mode_refuses_execution_with_409(api, conf, scheduler):
    conf.config(mode='observe', group='scheduler')
    rows.insert(models.Audit, dict(uuid=RECOMMENDED, state='recommended'))

    response = _post(api, '/v1/audits/%s/execute' % RECOMMENDED)

    assert response.status_code == 409
    detail = response.json['errors'][0]['detail']
    assert detail.startswith('audit %s is not executed: ' % RECOMMENDED)
    assert '[scheduler] mode = observe' in detail
    assert 'set mode = manage' in detail
    assert db_audits.audit_get(context.get_admin_context(),
                               RECOMMENDED).state == 'recommended'
    # Planning goes on: a new audit is still cast to be planned.
    assert _post(api, '/v1/audits').status_code == 202
    assert scheduler.called.wait(10)
    assert [call for call, _ in scheduler.calls] == ['run_audit']


def test_audit_with_actions(api):
    audit = api.get('/v1/audits/' + data.AUDIT).json['audit']
    assert [a['action_type'] for a in audit['actions']] == [
        'migrate', 'power_off']
    assert audit['parameters'] == {'threshold': 0.8}
    assert api.get('/v1/audits?state=succeeded').json['audits'][0][
        'uuid'] == data.AUDIT
    assert api.get('/v1/audits?state=pending').json['audits'] == []
