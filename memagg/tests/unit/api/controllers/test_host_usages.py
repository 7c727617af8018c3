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

"""GET /v1/host_usages (microversion 1.5): every host's memory in one
body, the sums per host on a seeded database, admin only, unknown below
1.5, and a number of queries that does not grow with the hosts."""
import jsonschema
import pytest
import sqlalchemy as sa

from memagg.api import microversion
from memagg.api import openapi
from memagg.common import context
from memagg.conf import CONF
from memagg.db import facade as db_facade
from memagg.db import reports as db_reports
from memagg.db.sqlalchemy import models
from memagg.tests.unit.api import data
from memagg.tests.unit.db import rows

V15 = {microversion.HEADER: 'memory-aggregation 1.5'}
URL = '/v1/host_usages'


def _get(api, headers=V15):
    return api.get(URL, headers=headers)


def _by_host(body):
    return {u['host']: u for u in body['host_usages']}


def test_body_matches_the_document(api):
    response = _get(api)

    assert response.status_code == 200
    assert response.headers[microversion.HEADER] == \
        'memory-aggregation 1.5'
    document = openapi.build(CONF.api.max_limit)
    schema = dict(document['paths'][URL]['get']['responses']['200'][
        'content']['application/json']['schema'],
        components=document['components'])
    jsonschema.validate(response.json, schema)


def test_sample_cluster(api):
    body = _get(api).json
    usages = _by_host(body)

    assert list(usages) == ['host-1', 'host-2']
    one = usages['host-1']
    assert {k: v for k, v in one.items() if k != 'reported_at'} == dict(
        host='host-1', state='active', memory_mb=65536, reserved_mb=0,
        wss_maxavg_mb=1100, booked_mb=4096, instances=1, remote_mb=512)
    assert one['reported_at'].endswith('Z')
    assert usages['host-2']['remote_mb'] == 0
    # Both lend 2048 MiB; host-2 holds the grant's two 256 MiB slabs.
    assert body['reservoir_free_mb'] == 2048 + 2048 - 512


def _seed_sums():
    """host-3: one instance per fallback of resident memory, one gone, a
    pending and a released grant; host-4 stale, host-5 standby, both
    lending; host-6 reported nothing yet."""
    ctx = context.get_admin_context()
    db_reports.report_ingest(ctx, dict(name='host-3', memory_mb=16384,
                                       reserved_mb=1024, lendable_mb=3000), [
        dict(uuid='a0000000-0000-4000-8000-000000000001', booked_mb=2048,
             wss_maxavg_mb=700, wss_mb=900, current_mb=2048),
        dict(uuid='a0000000-0000-4000-8000-000000000002', booked_mb=1024,
             wss_mb=300, current_mb=1024),
        dict(uuid='a0000000-0000-4000-8000-000000000003', booked_mb=512,
             current_mb=400),
        dict(uuid='a0000000-0000-4000-8000-000000000004', booked_mb=256,
             status='gone', wss_maxavg_mb=100, current_mb=256)], [])
    db_reports.report_ingest(ctx, dict(name='host-4', memory_mb=8192,
                                       lendable_mb=5000), [],
                             [], reported_at=rows.ago(hours=1))
    db_reports.report_ingest(ctx, dict(name='host-5', memory_mb=8192,
                                       lendable_mb=7000, state='standby'),
                             [], [])
    rows.insert(models.Host, dict(name='host-6', memory_mb=4096))
    _, _, active = rows.insert(
        models.Grant, dict(consumer_host='host-3', granted_mb=128,
                           status='pending'),
        dict(consumer_host='host-3', granted_mb=64, status='released'),
        dict(consumer_host='host-3', granted_mb=96))
    # On a donor (stale host-4, which lends nothing now), and one slab in
    # host-3's local tier: not remote memory.
    rows.insert(models.Slab, dict(grant_id=active, index=0,
                                  donor_host='host-4', size_mb=32,
                                  status='active'),
                dict(grant_id=active, index=1, donor_host='host-3',
                     size_mb=64, status='reclaimed'))
    (grant_id,) = rows.insert(models.Grant, dict(consumer_host='host-1',
                                                 granted_mb=0))
    rows.insert(models.Slab, dict(grant_id=grant_id, donor_host='host-3',
                                  size_mb=200, status='pending'),
                dict(grant_id=grant_id, index=9, donor_host='host-3',
                     size_mb=100, status='released'))


def test_sums_per_host(api):
    _seed_sums()

    body = _get(api).json
    usages = _by_host(body)

    three = usages['host-3']
    # WSS^maxavg 700, else the latest WSS 300, else the current 400; the
    # gone instance is not counted.
    assert (three['wss_maxavg_mb'], three['booked_mb'], three['instances'],
            three['reserved_mb'], three['remote_mb']) == (
        700 + 300 + 400, 2048 + 1024 + 512, 3, 1024, 32)
    assert usages['host-4']['reported_at'] is not None
    assert usages['host-5']['state'] == 'standby'
    six = usages['host-6']
    assert (six['reported_at'], six['instances'], six['wss_maxavg_mb'],
            six['booked_mb'], six['remote_mb']) == (None, 0, 0, 0, 0)
    # Lenders: host-1 (2048), host-2 (2048 less 512 held) and host-3 (3000
    # less its pending 200); host-4 is stale and host-5 standby.
    assert body['reservoir_free_mb'] == 2048 + 1536 + 2800


def test_one_query_per_table_however_many_hosts(api):
    def queries():
        statements = []

        def record(conn, cursor, statement, *args):
            statements.append(statement)
        engine = db_facade.get_engine()
        sa.event.listen(engine, 'before_cursor_execute', record)
        try:
            assert _get(api).status_code == 200
        finally:
            sa.event.remove(engine, 'before_cursor_execute', record)
        return [s for s in statements if s.lstrip().upper().startswith(
            'SELECT')]

    few = queries()
    data.load_instances(50, host='bulk-1')
    data.load_instances(40, host='bulk-2')
    rows.insert(models.Host, *[dict(name='empty-%d' % n) for n in range(30)])
    many = queries()

    assert len(many) == len(few) == 5
    assert len(_by_host(_get(api).json)) == 2 + 2 + 30


def test_member_is_forbidden(api):
    response = api.as_(data.PROJECT_A, 'member,reader', URL, headers=V15)

    assert response.status_code == 403
    assert 'memagg:host_usage:list' in response.json['errors'][0]['detail']


@pytest.mark.parametrize('version', ['1.0', '1.4'])
def test_unknown_below_1_5(api, version):
    response = _get(api, {microversion.HEADER:
                          'memory-aggregation %s' % version})

    assert response.status_code == 404
    assert _get(api).status_code == 200


V112 = {microversion.HEADER: 'memory-aggregation 1.12'}


def test_1_12_shows_what_each_host_lends_borrows_and_has_free(api):
    body = _get(api, V112).json
    usages = _by_host(body)

    assert body['links'] == []
    # host-2 lends the grant's two 256 MiB slabs to host-1's instance.
    assert (usages['host-2']['lent_mb'], usages['host-2']['borrowed_mb']) \
        == (512, 0)
    assert (usages['host-1']['lent_mb'], usages['host-1']['borrowed_mb']) \
        == (0, 512)
    assert usages['host-1']['free_reservoir_mb'] == 4096
    assert 'lent_mb' not in _by_host(_get(api).json)['host-1']


def test_1_12_pages_follow_the_sort_and_filters(api):
    for n in range(5):
        rows.insert(models.Host, dict(name='rack-%d' % n,
                                      memory_mb=1000 * (5 - n)))
    url = URL + '?limit=2&sort_key=memory_mb&sort_dir=desc' \
                '&host_contains=RACK'
    first = api.get(url, headers=V112).json
    assert [u['host'] for u in first['host_usages']] == ['rack-0', 'rack-1']
    [link] = first['links']
    assert link['rel'] == 'next' and 'marker=rack-1' in link['href']
    second = api.get(link['href'], headers=V112).json
    assert [u['host'] for u in second['host_usages']] == ['rack-2', 'rack-3']
    last = api.get(url + '&marker=rack-3', headers=V112).json
    assert [u['host'] for u in last['host_usages']] == ['rack-4']
    assert last['links'] == []
    # The reservoir's total does not depend on the page.
    assert last['reservoir_free_mb'] == _get(api).json['reservoir_free_mb']


def test_1_12_state_filter(api):
    _seed_sums()
    body = api.get(URL + '?state=standby', headers=V112).json

    assert [u['host'] for u in body['host_usages']] == ['host-5']


@pytest.mark.parametrize('query, field', [
    ('sort_key=cpu', 'sort_key'), ('limit=0', 'limit'),
    ('marker=no-such-host', 'marker'), ('sort_dir=up', 'sort_dir'),
    ('colour=red', 'colour')])
def test_1_12_bad_query_is_400_naming_it(api, query, field):
    response = api.get(URL + '?' + query, headers=V112)

    assert response.status_code == 400
    assert response.json['errors'][0]['field'] == field


def test_query_below_1_12_is_400(api):
    response = _get(api, {microversion.HEADER:
                          'memory-aggregation 1.11'})
    assert response.status_code == 200
    response = api.get(URL + '?limit=1', headers=V15)

    assert response.status_code == 400
    assert response.json['errors'][0]['field'] == 'limit'
    assert '1.12' in response.json['errors'][0]['detail']
