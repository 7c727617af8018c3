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

"""memaggclient against the real API app served over HTTP: microversion
negotiation, the header on every call, every operation, paging, and each
error as a typed exception with the API's message, field and request id."""
import datetime
import socket

import pytest
from keystoneauth1 import session as ks_session

from memagg.api import app as api_app
from memagg.api import microversion
from memaggclient import client as memagg_client
from memaggclient import exceptions
from memaggclient import http
from memagg.conf import CONF
from memagg.db.sqlalchemy import models
from memagg.tests import polling
from memagg.tests.unit.api import data
from memagg.tests.unit.api import live
from memagg.tests.unit.db import rows

# The client's newest version, which the API's must equal.
LATEST = microversion.to_string(http.MAX_VERSION)
BEYOND = '%d.%d' % (http.MAX_VERSION[0], http.MAX_VERSION[1] + 1)

RECOMMENDED = '66666666-6666-4666-8666-666666666666'


def _sent(recorder):
    """(method, path, version header) of each request but discovery."""
    return [r for r in recorder.requests if r[1] != '/']


# Negotiation

def test_default_is_the_newest_version_both_sides_support(memagg, server):
    assert memagg.api_version == LATEST
    memagg.hosts.list()
    memagg.instances.get(data.INSTANCE_A)
    _, recorder = server
    assert _sent(recorder) == [
        ('GET', '/v1/hosts', 'memory-aggregation ' + LATEST),
        ('GET', '/v1/instances/%s' % data.INSTANCE_A,
         'memory-aggregation ' + LATEST)]
    # The version document is read once, and without a version header.
    assert [r for r in recorder.requests if r[1] == '/'] == [
        ('GET', '/', None)]


def test_the_client_speaks_every_version_the_api_serves():
    # The client carries its own copy (it installs without the server): a
    # new microversion of the API is one the client must learn too.
    assert (http.SERVICE_TYPE, http.MIN_VERSION, http.MAX_VERSION) == (
        microversion.SERVICE_TYPE, microversion.MIN_VERSION,
        microversion.MAX_VERSION)


def test_default_is_capped_by_the_server(memagg, monkeypatch):
    monkeypatch.setattr(microversion, 'MAX_VERSION', (1, 1))

    assert memagg.api_version == '1.1'
    assert 'remote_mb' in memagg.instances.get(data.INSTANCE_A)


def test_default_is_capped_by_the_client(make_client, monkeypatch):
    monkeypatch.setattr(http, 'MAX_VERSION', (1, 2))

    assert make_client().api_version == '1.2'


def test_an_explicit_version_is_sent_and_shapes_the_answer(make_client,
                                                           server):
    old = make_client('1.0')

    assert old.api_version == '1.0'
    instance = old.instances.get(data.INSTANCE_A)
    assert 'remote_mb' not in instance and 'wss_maxavg_mb' not in instance
    assert make_client('1.1').instances.get(
        data.INSTANCE_A)['remote_mb'] == 512
    _, recorder = server
    assert [r[2] for r in _sent(recorder)] == [
        'memory-aggregation 1.0', 'memory-aggregation 1.1']


def test_latest_means_the_default(make_client):
    assert make_client('latest').api_version == LATEST


def test_a_version_the_server_does_not_serve_is_a_typed_error(
        make_client, server, monkeypatch):
    monkeypatch.setattr(microversion, 'MAX_VERSION', (1, 2))
    memagg = make_client('1.3')

    with pytest.raises(exceptions.UnsupportedVersion) as caught:
        memagg.hosts.list()

    assert str(caught.value) == (
        'microversion 1.3 is not served by the memagg API at %s (it serves '
        '1.0 to 1.2)' % server[0])
    assert _sent(server[1]) == []


@pytest.mark.parametrize('version, message', [
    (BEYOND, 'microversion %s is not supported by this client: it '
             'speaks 1.0 to %s' % (BEYOND, LATEST)),
    ('one', "microversion 'one' is not of the form X.Y (e.g. %s) or "
            "latest" % LATEST),
])
def test_a_version_the_client_does_not_speak_fails_at_once(version,
                                                           message):
    with pytest.raises(exceptions.UnsupportedVersion) as caught:
        memagg_client.Client(ks_session.Session(), api_version=version,
                             endpoint_override='http://127.0.0.1:9')
    assert str(caught.value) == message


def test_an_operation_newer_than_the_version_in_use_says_so(make_client,
                                                            server):
    with pytest.raises(exceptions.UnsupportedVersion) as caught:
        make_client('1.2').grants.create(data.INSTANCE_A, 64)

    assert str(caught.value) == ('creating a grant needs microversion 1.3 '
                                 'or later; this client uses 1.2')
    assert _sent(server[1]) == []


# Every operation

def test_hosts(memagg, scheduler):
    page = memagg.hosts.list(sort_key='memory_mb', sort_dir='desc')
    assert [h['name'] for h in page.items] == ['host-1', 'host-2']
    assert page.next_marker is None
    assert [h['name'] for h in memagg.hosts.list(state='active').items] == [
        'host-1', 'host-2']
    host = memagg.hosts.get('host-2')
    assert (host['name'], host['memory_mb']) == ('host-2', 32768)
    assert memagg.hosts.reclaim('host-2', 1) == 256


def test_instances_and_their_wss(memagg):
    page = memagg.instances.list(host='host-2')
    assert [i['uuid'] for i in page.items] == [data.INSTANCE_B]
    assert [i['uuid'] for i in memagg.instances.list(
        project_id=data.PROJECT_A, status='active').items] == [
            data.INSTANCE_A]
    instance = memagg.instances.get(data.INSTANCE_A)
    assert (instance['uuid'], instance['booked_mb'],
            instance['remote_mb']) == (data.INSTANCE_A, 4096, 512)

    samples = memagg.instances.wss(data.INSTANCE_A, limit=4)
    assert [s['wss_mb'] for s in samples.items] == [1000, 1001, 1002, 1003]
    assert samples.next_marker == str(samples.items[-1]['id'])
    assert [s['wss_mb'] for s in samples.next_page().items] == [1004, 1005]
    window = memagg.instances.wss(
        data.INSTANCE_A, since='2024-05-01T12:02:00Z',
        until=data.T0.replace(minute=3))
    assert [s['wss_mb'] for s in window.items] == [1002, 1003]


def test_a_member_lists_its_own_project_only(make_client):
    member = make_client(project=data.PROJECT_B, roles='member')

    assert [i['uuid'] for i in member.instances.list().items] == [
        data.INSTANCE_B]
    assert member.instances.get(data.INSTANCE_B)['uuid'] == data.INSTANCE_B


def test_reservoir(memagg):
    reservoir = memagg.reservoir.get()
    assert reservoir['free_reservoir_mb'] == 8192
    assert sorted(h['host'] for h in reservoir['hosts']) == [
        'host-1', 'host-2']


def test_grants(memagg, scheduler):
    assert [g['uuid'] for g in memagg.grants.list(
        instance_uuid=data.INSTANCE_A, consumer_host='host-1',
        status='active').items] == [data.GRANT]
    assert [s['index'] for s in memagg.grants.get(data.GRANT)['slabs']] == [
        0, 1]

    made = memagg.grants.create(data.INSTANCE_A, 200)
    # Since 1.10 the answer comes at once, the slabs reserved.
    assert (made['instance_uuid'], made['granted_mb'],
            made['status']) == (data.INSTANCE_A, 256, 'pending')

    def set_up():
        grant = memagg.grants.get(made['uuid'])
        return grant if grant['status'] != 'pending' else None
    grant = polling.wait_for(set_up, 10, interval=0.1,
                             message='grant set up by memagg-scheduler')
    assert (grant['granted_mb'], grant['status']) == (256, 'active')
    assert len(grant['slabs']) == 4
    assert 'secret' not in grant
    released = memagg.grants.delete(grant['uuid'])
    assert released['uuid'] == grant['uuid']
    # The API answers at once; memagg-scheduler releases it after.
    assert released['status'] == 'releasing'


def test_audits(memagg, scheduler):
    assert [a['uuid'] for a in memagg.audits.list(
        state='succeeded', since='2000-01-01T00:00:00Z').items] == [
            data.AUDIT]
    audit = memagg.audits.get(data.AUDIT)
    assert [(a['sequence'], a['action_type']) for a in audit['actions']] == [
        (0, 'migrate'), (1, 'power_off')]

    created = memagg.audits.create(memory_basis='booked', auto_execute=False,
                                   parameters={'underload_require': 'either'})
    assert (created['memory_basis'], created['auto_execute'],
            created['parameters']) == ('booked', False,
                                       {'underload_require': 'either'})
    assert memagg.audits.get(created['uuid'])['uuid'] == created['uuid']

    rows.insert(models.Audit, dict(uuid=RECOMMENDED, state='recommended'))
    assert memagg.audits.execute(RECOMMENDED)['uuid'] == RECOMMENDED


def test_migrations(memagg, scheduler):
    page = memagg.migrations.list(instance_uuid=data.INSTANCE_B,
                                  source_host='host-2', dest_host='host-1',
                                  status='completed')
    assert [m['uuid'] for m in page.items] == [data.MIGRATION]
    migration = memagg.migrations.get(data.MIGRATION)
    assert (migration['bytes_transferred'], migration['remote_share']) == (
        1 << 30, 0.25)

    created = memagg.migrations.create(data.INSTANCE_A, 'host-2')
    assert (created['instance_uuid'], created['source_host'],
            created['dest_host'], created['status']) == (
        data.INSTANCE_A, 'host-1', 'host-2', 'queued')
    assert memagg.migrations.get(created['uuid'])['uuid'] == created['uuid']


def test_creating_a_migration_needs_1_4(make_client, server):
    with pytest.raises(exceptions.UnsupportedVersion) as caught:
        make_client('1.3').migrations.create(data.INSTANCE_A, 'host-2')

    assert str(caught.value) == ('creating a migration needs microversion '
                                 '1.4 or later; this client uses 1.3')
    assert _sent(server[1]) == []


def test_host_usages_in_one_request(memagg, server):
    body = memagg.host_usages.list()

    assert [(u['host'], u['wss_maxavg_mb'], u['booked_mb'], u['instances'],
             u['remote_mb']) for u in body['host_usages']] == [
        ('host-1', 1100, 4096, 1, 512), ('host-2', 1100, 4096, 1, 0)]
    assert body['reservoir_free_mb'] == 2048 + 2048 - 512
    assert _sent(server[1]) == [
        ('GET', '/v1/host_usages', 'memory-aggregation ' + LATEST)]


def test_listing_host_usages_needs_1_5(make_client, server):
    with pytest.raises(exceptions.UnsupportedVersion) as caught:
        make_client('1.4').host_usages.list()

    assert str(caught.value) == ('listing host usages needs microversion '
                                 '1.5 or later; this client uses 1.4')
    assert _sent(server[1]) == []


def test_host_usages_by_page(memagg, server):
    page = memagg.host_usages.page(limit=1, sort_key='memory_mb',
                                   sort_dir='desc', host_contains='HOST')

    assert [u['host'] for u in page.items] == ['host-1']
    assert page.items[0]['borrowed_mb'] == 512
    assert page.next_marker == 'host-1'
    assert [u['host'] for u in page.next_page().items] == ['host-2']
    assert [u['host'] for u in memagg.host_usages.page(
        state='standby').items] == []


def test_cloud_usage(memagg, server):
    usage = memagg.cloud_usage.get(
        since=datetime.datetime(2024, 5, 1, 12, 0),
        until='2024-05-01T12:06:00Z', points=2)

    assert usage['now']['booked_mb'] == 8192
    assert [p['at'] for p in usage['history']] == [
        '2024-05-01T12:00:00Z', '2024-05-01T12:03:00Z']


def test_cloud_usage_and_pages_of_host_usages_need_1_12(make_client,
                                                        server):
    client = make_client('1.11')
    for call in (client.cloud_usage.get, client.host_usages.page):
        with pytest.raises(exceptions.UnsupportedVersion):
            call()
    assert _sent(server[1]) == []


def test_services(memagg):
    assert [s['binary'] for s in memagg.services.list(
        binary='memagg-compute').items] == ['memagg-compute']
    assert [(s['host'], s['disabled']) for s in memagg.services.list(
        disabled=False, sort_key='host').items] == [
            ('ctl', False), ('host-1', False)]
    assert memagg.services.list(disabled=True).items == []


# Paging

def test_pages_follow_next_links_through_every_item(memagg):
    uuids = data.load_instances(45)

    first = memagg.instances.list(host='bulk-host', limit=20)
    assert [i['uuid'] for i in first.items] == uuids[:20]
    assert first.next_marker == uuids[19]
    second = memagg.instances.list(host='bulk-host', limit=20,
                                   marker=first.next_marker)
    assert [i['uuid'] for i in second.items] == uuids[20:40]

    sizes, page = [], first
    while page is not None:
        sizes.append(len(page.items))
        page = page.next_page()
    assert sizes == [20, 20, 5]
    assert [i['uuid'] for i in first.all_items()] == uuids
    assert [i['uuid'] for i in memagg.instances.list(
        host='bulk-host', limit=20, sort_key='booked_mb',
        sort_dir='desc').all_items()] == uuids[::-1]


# Errors

def _raised(call, *args, **kwargs):
    with pytest.raises(exceptions.ClientException) as caught:
        call(*args, **kwargs)
    return caught.value


def _check_one_line(exc, status):
    assert exc.status_code == status
    assert exc.request_id.startswith('req-')
    assert str(exc) == 'HTTP %d: %s (request %s)' % (status, exc.message,
                                                     exc.request_id)
    assert '\n' not in str(exc)


def test_bad_request_names_the_field(memagg):
    exc = _raised(memagg.instances.list, limit=0)

    assert type(exc) is exceptions.BadRequest
    assert exc.field == 'limit'
    assert 'give a value from 1 to' in exc.message
    _check_one_line(exc, 400)


def test_forbidden(make_client):
    exc = _raised(make_client(project=data.PROJECT_B,
                              roles='member').hosts.list)

    assert type(exc) is exceptions.Forbidden
    assert 'memagg:host:list' in exc.message
    _check_one_line(exc, 403)


def test_not_found(memagg):
    exc = _raised(memagg.grants.get, data.MISSING)

    assert type(exc) is exceptions.NotFound
    assert data.MISSING in exc.message
    _check_one_line(exc, 404)


def test_not_acceptable_when_the_server_stops_serving_the_version(
        memagg, monkeypatch):
    assert memagg.api_version == LATEST
    monkeypatch.setattr(microversion, 'MAX_VERSION', (1, 2))

    exc = _raised(memagg.hosts.list)

    assert type(exc) is exceptions.NotAcceptable
    assert exc.field == microversion.HEADER
    assert 'Version %s is not supported' % LATEST in exc.message
    _check_one_line(exc, 406)


def test_conflict(memagg):
    exc = _raised(memagg.audits.execute, data.AUDIT)

    assert type(exc) is exceptions.Conflict
    assert 'only a recommended audit can be executed' in exc.message
    _check_one_line(exc, 409)


def test_service_unavailable_when_the_scheduler_does_not_answer(
        make_client, conf, fake_rpc):
    conf.config(rpc_response_timeout=1)
    # Before 1.10 a grant request waits for memagg-scheduler's answer.
    memagg = make_client('1.9')

    exc = _raised(memagg.grants.create, data.INSTANCE_A, 64)

    assert type(exc) is exceptions.ServiceUnavailable
    assert 'memagg-scheduler did not answer' in exc.message
    _check_one_line(exc, 503)


def test_unauthorized(conf, sqlite_db):
    conf.config(auth_strategy='keystone', group='api')
    conf.config(www_authenticate_uri='http://127.0.0.1:5000/v3',
                group='keystone_authtoken')
    with live.serving(api_app.create_app(CONF)) as url:
        memagg = memagg_client.Client(ks_session.Session(),
                                      endpoint_override=url)
        exc = _raised(memagg.hosts.list)

    assert type(exc) is exceptions.Unauthorized
    assert 'authentication' in exc.message
    _check_one_line(exc, 401)


def test_another_status_is_the_base_class_with_its_code(memagg):
    exc = _raised(memagg.http.request, 'PUT', '/v1/hosts')

    assert type(exc) is exceptions.HttpError
    assert 'PUT is not allowed on /v1/hosts' in exc.message
    _check_one_line(exc, 405)


def test_an_unreachable_api_is_a_typed_error():
    with socket.socket() as sock:
        # A port that was just free: nothing listens there.
        sock.bind(('127.0.0.1', 0))
        port = sock.getsockname()[1]
    memagg = memagg_client.Client(
        ks_session.Session(), endpoint_override='http://127.0.0.1:%d' % port,
        connect_retries=0)

    exc = _raised(memagg.hosts.list)

    assert type(exc) is exceptions.ConnectionFailed
    assert str(exc).startswith('the memagg API could not be reached: ')
    assert '127.0.0.1:%d' % port in str(exc) and '\n' not in str(exc)
