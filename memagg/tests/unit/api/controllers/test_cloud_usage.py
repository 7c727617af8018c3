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

"""GET /v1/cloud_usage (microversion 1.12): the cloud now from the hosts'
usages, and over time from the stored WSS samples, cut into buckets."""
import datetime

import jsonschema
import pytest

from memagg.api.controllers import cloud_usage
from memagg.api import microversion
from memagg.api import openapi
from memagg.common import context
from memagg.conf import CONF
from memagg.db import reports as db_reports
from memagg.tests.unit.api import data

V112 = {microversion.HEADER: 'memory-aggregation 1.12'}
URL = '/v1/cloud_usage'
# The seeded samples: one a minute from T0, six of each instance.
RANGE = '?since=2024-05-01T12:00:00Z&until=2024-05-01T12:06:00Z'


def _get(api, query=RANGE, headers=V112):
    return api.get(URL + query, headers=headers)


def test_body_matches_the_document(api):
    response = _get(api)

    assert response.status_code == 200
    document = openapi.build(CONF.api.max_limit)
    schema = dict(document['paths'][URL]['get']['responses']['200'][
        'content']['application/json']['schema'],
        components=document['components'])
    jsonschema.validate(response.json, schema)


def test_now_sums_the_hosts(api):
    now = _get(api).json['cloud_usage']['now']

    # Two instances booked 4096 MiB each and keep 1100; host-1 alone
    # (65536 MiB) holds both, so host-2 could be emptied.
    assert now == dict(hosts=2, active_hosts=2, memory_mb=65536 + 32768,
                       booked_mb=8192, wss_maxavg_mb=2200,
                       freed_mb=8192 - 2200, hosts_needed=1,
                       emptiable_hosts=1, lent_mb=512)


def test_history_one_point_per_bucket(api):
    body = _get(api, RANGE + '&points=3').json['cloud_usage']

    assert (body['since'], body['until'], body['step_s']) == (
        '2024-05-01T12:00:00Z', '2024-05-01T12:06:00Z', 120)
    assert [p['at'] for p in body['history']] == [
        '2024-05-01T12:00:00Z', '2024-05-01T12:02:00Z',
        '2024-05-01T12:04:00Z']
    for point in body['history']:
        assert point == dict(point, hosts=2, booked_mb=8192,
                             wss_maxavg_mb=2200, freed_mb=5992,
                             hosts_needed=1, emptiable_hosts=1)


def test_history_per_instance_largest_wss_of_the_bucket(api):
    ctx = context.get_admin_context()
    db_reports.report_ingest(ctx, dict(name='host-1', memory_mb=65536), [
        dict(uuid=data.INSTANCE_A, booked_mb=4096)], [
        dict(instance_uuid=data.INSTANCE_A, wss_mb=3000, wss_maxavg_mb=None,
             current_mb=4096, estimator='badis',
             sampled_at=data.T0 + datetime.timedelta(seconds=30))])
    body = _get(api, RANGE + '&points=6').json['cloud_usage']

    # The sample without a max-average counts its WSS, and only once in
    # its bucket however many samples the instance has there.
    assert body['history'][0]['wss_maxavg_mb'] == 3000 + 1100
    assert body['history'][1]['wss_maxavg_mb'] == 2200


def test_range_without_samples_has_no_points(api):
    body = _get(api, '').json['cloud_usage']

    assert body['history'] == []
    assert body['step_s'] == 24 * 3600 // 60


@pytest.mark.parametrize('query, field', [
    (RANGE.replace('12:06', '11:00'), 'until'),
    ('?since=yesterday', 'since'), ('?points=0', 'points'),
    ('?points=501', 'points'), ('?step=5', 'step')])
def test_bad_query_is_400_naming_it(api, query, field):
    response = _get(api, query)

    assert response.status_code == 400
    assert response.json['errors'][0]['field'] == field


def test_member_is_forbidden(api):
    response = api.as_(data.PROJECT_A, 'member,reader', URL, headers=V112)

    assert response.status_code == 403


def test_unknown_below_1_12(api):
    response = _get(api, headers={microversion.HEADER:
                                  'memory-aggregation 1.11'})

    assert response.status_code == 404


@pytest.mark.parametrize('capacities, used, needed', [
    ([], 0, 0), ([100, 300, 200], 0, 0), ([100, 300, 200], 300, 1),
    ([100, 300, 200], 301, 2), ([100, 300, 200], 10000, 3)])
def test_hosts_needed_fills_the_largest_first(capacities, used, needed):
    assert cloud_usage.hosts_needed(capacities, used) == needed
