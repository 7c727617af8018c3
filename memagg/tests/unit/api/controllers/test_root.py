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

"""GET / and GET /v1: the version documents, and the microversion echoed
with Vary."""
from memagg.api import microversion

LATEST = {microversion.HEADER: 'memory-aggregation latest'}


def test_root_version_document(api):
    response = api.get('/')
    assert response.status_code == 200
    (version,) = response.json['versions']
    assert version['id'] == 'v1.0'
    assert version['status'] == 'CURRENT'
    assert (version['min_version'], version['max_version']) == (
        '1.0', microversion.to_string(microversion.MAX_VERSION))
    assert version['links'][0]['href'].endswith('/v1/')
    assert api.get('/v1').json['version'] == version


def test_version_echoed_with_vary(api):
    response = api.get('/v1/hosts', headers=LATEST)
    assert response.headers[microversion.HEADER] == \
        microversion.response_header(microversion.MAX_VERSION)
    assert microversion.HEADER in response.headers['Vary']
    plain = api.get('/v1/hosts')
    assert plain.headers[microversion.HEADER] == 'memory-aggregation 1.0'
