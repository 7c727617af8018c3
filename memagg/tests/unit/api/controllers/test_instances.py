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

"""GET /v1/instances, /v1/instances/{uuid} and its WSS history, through
the whole WSGI pipeline (noauth, SQLite): fields by microversion, time
ranges, filters and pages."""
import urllib.parse

import pytest

from memagg.api import microversion
from memagg.tests.unit.api import data

SAMPLER = ('sampler_backend', 'sampler_error_mb', 'sampler_pages', 'warming')
RECLAIM = ('reclaimed_mb', 'promotion_rate', 'promotion_rate_pct',
           'promotion_slo', 'reclaim_mechanism')
HISTORY_RECLAIM = ('reclaimed_mb', 'promotion_rate')


def test_instance_fields_gated_by_microversion(api):
    def get(version):
        return api.get('/v1/instances/' + data.INSTANCE_A, headers={
            microversion.HEADER: 'memory-aggregation ' + version,
        }).json['instance']
    old, v16, v17, new = get('1.0'), get('1.6'), get('1.7'), get('latest')
    assert 'remote_mb' not in old and 'wss_maxavg_mb' not in old
    assert (v16['remote_mb'], v16['wss_maxavg_mb']) == (512, 1100)
    assert 'local_policy' not in v16
    assert v17['local_policy'] == 'cmms/equal'
    assert not set(SAMPLER) & set(v17)
    assert {k: new[k] for k in SAMPLER} == data.sampler(data.SAMPLES - 1)
    assert {k: v for k, v in new.items()
            if k not in ('remote_mb', 'wss_maxavg_mb', 'local_policy',
                         'l1_share_mb', *SAMPLER, *RECLAIM)} == old


def test_instances_show_their_l1_share_from_1_14(api):
    url = '/v1/instances/' + data.INSTANCE_A
    v113, v114 = (_get(api, url, v)['instance'] for v in ('1.13', '1.14'))
    assert 'l1_share_mb' not in v113
    assert v114['l1_share_mb'] == 384


def _get(api, url, version):
    response = api.get(url, headers={
        microversion.HEADER: 'memory-aggregation ' + version})
    assert response.headers[microversion.HEADER] == (
        'memory-aggregation ' + version)
    return response.json


def test_instances_show_host_reclaim_from_1_11(api):
    """1.11 adds host reclaim to an instance, alone and in a listing; 1.10
    answers exactly as before it."""
    url = '/v1/instances/' + data.INSTANCE_A
    v110, v111 = (_get(api, url, v)['instance'] for v in ('1.10', '1.11'))
    assert {k: v111[k] for k in RECLAIM} == data.RECLAIM
    assert v111['promotion_rate'] < v111['promotion_slo']
    assert not set(RECLAIM) & set(v110)
    assert {k: v for k, v in v111.items() if k not in RECLAIM} == v110
    listed = {i['uuid']: i for i in _get(api, '/v1/instances',
                                         '1.11')['instances']}
    assert listed[data.INSTANCE_A] == v111
    assert all(not set(RECLAIM) & set(i) for i in _get(
        api, '/v1/instances', '1.10')['instances'])


def test_wss_history_shows_host_reclaim_from_1_11(api):
    url = '/v1/instances/%s/wss' % data.INSTANCE_A
    v110, v111 = (_get(api, url, v)['wss_samples'] for v in ('1.10', '1.11'))
    assert [{k: s[k] for k in HISTORY_RECLAIM} for s in v111] == [
        data.reclaim(i) for i in range(data.SAMPLES)]
    # A history point shows neither the SLO nor the mechanism.
    assert all(set(RECLAIM) & set(s) == set(HISTORY_RECLAIM) for s in v111)
    assert all(not set(RECLAIM) & set(s) for s in v110)
    assert [{k: v for k, v in s.items() if k not in HISTORY_RECLAIM}
            for s in v111] == v110


def test_wss_history_shows_the_sampler_from_1_8(api):
    def history(version):
        return api.get('/v1/instances/%s/wss' % data.INSTANCE_A, headers={
            microversion.HEADER: 'memory-aggregation ' + version,
        }).json['wss_samples']
    v17, v18 = history('1.7'), history('1.8')
    assert [{k: s[k] for k in SAMPLER} for s in v18] == [
        data.sampler(i) for i in range(data.SAMPLES)]
    assert [s['warming'] for s in v18] == [True] + [False] * 5
    assert all(not set(SAMPLER) & set(s) for s in v17)
    assert [{k: v for k, v in s.items() if k not in SAMPLER}
            for s in v18] == v17


def test_wss_history_time_range(api):
    url = '/v1/instances/%s/wss' % data.INSTANCE_A
    everything = api.get(url).json['wss_samples']
    assert [s['wss_mb'] for s in everything] == list(range(1000, 1006))
    window = api.get(url, query_string={
        'since': '2024-05-01T14:01:00+02:00',
        'until': '2024-05-01T12:03:00Z'}).json['wss_samples']
    assert [s['sampled_at'] for s in window] == [
        '2024-05-01T12:01:00Z', '2024-05-01T12:02:00Z',
        '2024-05-01T12:03:00Z']
    newest = api.get(url + '?sort_dir=desc&limit=2').json['wss_samples']
    assert [s['wss_mb'] for s in newest] == [1005, 1004]
    assert api.get('/v1/instances/%s/wss' % data.MISSING).status_code == 404


def test_since_after_until(api):
    response = api.get('/v1/instances/%s/wss?since=2024-05-02T00:00:00Z'
                       '&until=2024-05-01T00:00:00Z' % data.INSTANCE_A)
    assert response.status_code == 400
    assert response.json['errors'][0]['field'] == 'until'


def _pages(api, url):
    """Follow next links from ``url``; return the pages' item keys."""
    pages = []
    while url:
        body = api.get(url).json
        pages.append([i['uuid'] for i in body['instances']])
        nexts = [link['href'] for link in body['links']
                 if link['rel'] == 'next']
        url = nexts[0] if nexts else None
        if url:
            parsed = urllib.parse.urlsplit(url)
            url = parsed.path + '?' + parsed.query
    return pages


@pytest.mark.parametrize('sort', ['', '&sort_key=booked_mb&sort_dir=desc'])
def test_pagination_follows_next_links(api, sort):
    uuids = data.load_instances(23)
    pages = _pages(api, '/v1/instances?host=bulk-host&limit=10' + sort)
    assert [len(p) for p in pages] == [10, 10, 3]
    flat = [u for page in pages for u in page]
    assert flat == (uuids[::-1] if sort else uuids)


def test_default_page_size(api, conf):
    conf.config(default_limit=5, group='api')
    data.load_instances(7)
    body = api.get('/v1/instances?host=bulk-host').json
    assert len(body['instances']) == 5
    assert 'limit=5' in body['links'][0]['href']


def test_filters(api):
    def uuids(query):
        return [i['uuid'] for i in api.get('/v1/instances?' + query).json[
            'instances']]
    assert uuids('host=host-2') == [data.INSTANCE_B]
    assert uuids('project_id=' + data.PROJECT_A) == [data.INSTANCE_A]
    assert uuids('status=gone') == []
