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

"""Pagination, sorting and filters over HTTP on a real MariaDB database."""
import urllib.parse

import pytest
import requests

from memagg.api import app as api_app
from memagg.conf import CONF
from memagg.tests.unit.api import data
from memagg.tests.unit.api import live

pytestmark = pytest.mark.functional


@pytest.fixture
def api_url(conf, mysql_db):
    conf.config(auth_strategy='noauth', group='api')
    data.load()
    with live.serving(api_app.create_app(CONF)) as url:
        yield url


def _walk(session, url):
    """Follow next links from ``url``; return each page's instance UUIDs."""
    pages = []
    while url:
        response = session.get(url, timeout=30)
        body = response.json()
        pages.append([i['uuid'] for i in body['instances']])
        link = next((link['href'] for link in body['links']
                     if link['rel'] == 'next'), None)
        # A path from the server's root, resolved as a browser would.
        url = link and urllib.parse.urljoin(response.url, link)
    return pages


def test_pages_cover_every_instance_once(api_url):
    uuids = data.load_instances(45)
    with requests.Session() as session:
        pages = _walk(session, api_url +
                      '/v1/instances?host=bulk-host&limit=20')
        assert [len(page) for page in pages] == [20, 20, 5]
        assert [u for page in pages for u in page] == uuids

        desc = _walk(session, api_url + '/v1/instances?host=bulk-host'
                     '&limit=20&sort_key=booked_mb&sort_dir=desc')
        assert [u for page in desc for u in page] == uuids[::-1]


def test_filters_and_project_scope(api_url):
    data.load_instances(3, host='other-host', project=data.PROJECT_B)
    with requests.Session() as session:
        body = session.get(api_url + '/v1/instances?host=other-host',
                           timeout=30).json()
        assert len(body['instances']) == 3 and body['links'] == []
        member = session.get(api_url + '/v1/instances', timeout=30, headers={
            'X-Project-Id': data.PROJECT_B, 'X-Roles': 'member'}).json()
        assert {i['project_id'] for i in member['instances']} == {
            data.PROJECT_B}
        assert len(member['instances']) == 4
        bad = session.get(api_url + '/v1/instances?marker=' + data.MISSING,
                          timeout=30)
        assert bad.status_code == 400
        assert bad.json()['errors'][0]['field'] == 'marker'


def test_host_reclaim_reads_back_from_mariadb_at_1_11_only(api_url):
    """The host reclaim columns through MariaDB: an instance and its WSS
    history show them at 1.11 as they were reported (doubles kept
    exactly), and 1.10 answers without them."""
    def get(path, version):
        return requests.get(api_url + path, timeout=30, headers={
            'OpenStack-API-Version': 'memory-aggregation ' + version}).json()

    path = '/v1/instances/' + data.INSTANCE_A
    v110, v111 = (get(path, v)['instance'] for v in ('1.10', '1.11'))
    assert {k: v111[k] for k in data.RECLAIM} == data.RECLAIM
    assert {k: v for k, v in v111.items() if k not in data.RECLAIM} == v110
    history = get(path + '/wss', '1.11')['wss_samples']
    assert [(s['reclaimed_mb'], s['promotion_rate']) for s in history] == [
        tuple(data.reclaim(i).values()) for i in range(data.SAMPLES)]
    assert all('reclaimed_mb' not in s
               for s in get(path + '/wss', '1.10')['wss_samples'])
