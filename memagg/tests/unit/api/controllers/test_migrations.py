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

"""POST /v1/migrations (microversion 1.4): the request checked, a
recommended one-action audit stored with its migration queued in one
transaction, and the audit cast to memagg-scheduler for execution (a
recording endpoint on oslo.messaging's fake driver)."""

import pytest

from memagg.api import microversion
from memagg.common import context
from memagg.db import facade as db_facade
from memagg.db import listings as db_listings
from memagg.db.sqlalchemy import models
from memagg.tests.unit.api import data
from memagg.tests.unit.api.controllers import test_audits
from memagg.tests.unit.db import rows

# The recording scheduler of the audit tests: the same cast is sent.
scheduler = test_audits.scheduler

V14 = {microversion.HEADER: 'memory-aggregation 1.4'}
BUSY = '77777777-7777-4777-8777-777777777777'
MOVE_A = {'instance_uuid': data.INSTANCE_A, 'dest_host': 'host-2'}


def _post(api, body, headers=V14, **kwargs):
    return api.post('/v1/migrations', headers=headers, json=body, **kwargs)


def _migrations_of(instance_uuid):
    return db_listings.list_resources(
        context.get_admin_context(), 'migrations',
        filters={'instance_uuid': instance_uuid})


def _requested_audits():
    return [a for a in db_listings.list_resources(context.get_admin_context(),
                                                  'audits')
            if a.uuid != data.AUDIT]


def test_a_migration_is_queued_as_a_one_action_plan(api, scheduler):
    response = _post(api, MOVE_A)

    assert response.status_code == 202, response.json
    migration = response.json['migration']
    assert (migration['instance_uuid'], migration['source_host'],
            migration['dest_host'], migration['status'],
            migration['attempts']) == (data.INSTANCE_A, 'host-1', 'host-2',
                                       'queued', 0)
    (row,) = _migrations_of(data.INSTANCE_A)
    assert row.uuid == migration['uuid']
    (audit,) = _requested_audits()
    assert audit.state == 'recommended'
    assert [(a.action_type, a.instance_uuid, a.source_host, a.dest_host,
             a.reason, a.state, a.id) for a in audit.actions] == [
        ('migrate', data.INSTANCE_A, 'host-1', 'host-2', 'requested',
         'pending', row.audit_action_id)]
    assert 'requested through the API' in audit.reason
    assert scheduler.called.wait(10)
    assert scheduler.calls == [('execute_audit', audit.uuid)]
    shown = api.get('/v1/audits/' + audit.uuid, headers=V14).json['audit']
    assert [a['action_type'] for a in shown['actions']] == ['migrate']


@pytest.mark.parametrize('body, field, detail', [
    ({'instance_uuid': data.INSTANCE_A}, 'dest_host',
     'required field missing'),
    ({'dest_host': 'host-2'}, 'instance_uuid', 'required field missing'),
    ({'instance_uuid': 'vm-1', 'dest_host': 'host-2'}, 'instance_uuid',
     'give a UUID'),
    ({'instance_uuid': data.INSTANCE_A, 'dest_host': ''}, 'dest_host', ''),
    (dict(MOVE_A, force=True), 'force', 'accepts: dest_host, '
                                        'instance_uuid'),
    ({'instance_uuid': data.INSTANCE_A, 'dest_host': 'host-1'},
     'dest_host', 'is the host instance %s is on already' %
     data.INSTANCE_A),
])
def test_a_bad_request_is_400_naming_the_field(api, scheduler,
                                               body, field, detail):
    response = _post(api, body)

    assert response.status_code == 400, response.json
    error = response.json['errors'][0]
    assert error['field'] == field
    assert detail in error['detail']
    assert _migrations_of(data.INSTANCE_A) == []
    assert scheduler.calls == []


@pytest.mark.parametrize('body, detail', [
    ({'instance_uuid': data.MISSING, 'dest_host': 'host-2'},
     'Instance %s could not be found' % data.MISSING),
    ({'instance_uuid': data.INSTANCE_A, 'dest_host': 'host-9'},
     'Host host-9 could not be found'),
])
def test_an_unknown_instance_or_host_is_404(api, scheduler,
                                            body, detail):
    response = _post(api, body)

    assert response.status_code == 404
    assert detail in response.json['errors'][0]['detail']
    assert _requested_audits() == []


def _set(model, key, value, **values):
    with db_facade.get_engine().begin() as connection:
        connection.execute(model.__table__.update().where(
            getattr(model, key) == value).values(**values))


def test_a_standby_destination_is_409(api, scheduler):
    _set(models.Host, 'name', 'host-2', state='standby')

    response = _post(api, MOVE_A)

    assert response.status_code == 409
    assert response.json['errors'][0]['detail'] == (
        'host host-2 is standby: only an active host can take an instance')
    assert _requested_audits() == []


def test_a_gone_instance_is_409(api, scheduler):
    _set(models.Instance, 'uuid', data.INSTANCE_A, status='gone')

    response = _post(api, MOVE_A)

    assert response.status_code == 409
    assert 'instance %s is gone from host host-1' % data.INSTANCE_A in \
        response.json['errors'][0]['detail']


@pytest.mark.parametrize('status', ['queued', 'running'])
def test_an_instance_already_migrating_is_409(api, scheduler,
                                              status):
    rows.insert(models.Migration, dict(
        uuid=BUSY, instance_uuid=data.INSTANCE_A, source_host='host-1',
        dest_host='host-2', status=status))

    response = _post(api, MOVE_A)

    assert response.status_code == 409
    assert response.json['errors'][0]['detail'] == (
        'instance %s already has migration %s %s; wait until it ends'
        % (data.INSTANCE_A, BUSY, status))
    assert _requested_audits() == []
    assert scheduler.calls == []


def test_an_ended_migration_does_not_block_another(api, scheduler):
    # INSTANCE_B's migration in the sample data is completed.
    response = _post(api, {'instance_uuid': data.INSTANCE_B,
                           'dest_host': 'host-1'})

    assert response.status_code == 202
    assert response.json['migration']['status'] == 'queued'


def test_a_member_may_not_ask(api, scheduler):
    response = _post(api, MOVE_A, headers=dict(
        V14, **{'X-Project-Id': data.PROJECT_A, 'X-Roles': 'member,reader'}))

    assert response.status_code == 403
    assert 'memagg:migration:create' in response.json['errors'][0]['detail']
    assert _migrations_of(data.INSTANCE_A) == []


def test_below_1_4_the_route_does_not_exist(api, scheduler):
    response = _post(api, MOVE_A, headers={
        microversion.HEADER: 'memory-aggregation 1.3'})

    assert response.status_code == 405
    assert response.headers['Allow'] == 'GET, HEAD, OPTIONS'
    assert _migrations_of(data.INSTANCE_A) == []


def test_an_unreachable_bus_is_503_and_fails_the_request(
        unreachable_bus_api, unreachable_bus):
    # The cast's bounded retries end; the migration and its audit are
    # failed so that neither blocks a later request.
    response = _post(unreachable_bus_api, MOVE_A)

    assert response.status_code == 503
    # The driver waited between its attempts, seconds in all, not forever.
    assert 0 < sum(unreachable_bus) < 30
    (migration,) = _migrations_of(data.INSTANCE_A)
    assert migration.status == 'failed'
    assert 'could not be reached' in migration.error
    (audit,) = _requested_audits()
    assert (audit.state, audit.actions[0].state) == ('failed', 'failed')


def test_observe_mode_refuses_a_migration_with_409(api, conf, scheduler):
    conf.config(mode='observe', group='scheduler')

    response = _post(api, MOVE_A)

    assert response.status_code == 409
    assert response.json['errors'][0]['detail'].startswith(
        'instance %s is not migrated: memagg-scheduler runs with '
        '[scheduler] mode = observe' % data.INSTANCE_A)
    assert _requested_audits() == []
    assert _migrations_of(data.INSTANCE_A) == []
    assert scheduler.calls == []


def test_migrations(api):
    (migration,) = api.get('/v1/migrations?instance_uuid=' +
                           data.INSTANCE_B).json['migrations']
    assert migration['remote_share'] == 0.25
    shown = api.get('/v1/migrations/' + data.MIGRATION).json['migration']
    assert shown == migration
    assert api.get('/v1/migrations/' + data.MISSING).status_code == 404
