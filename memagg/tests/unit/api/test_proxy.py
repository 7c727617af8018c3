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

"""Links behind a reverse proxy and under a path prefix, through the whole
WSGI pipeline: the version documents' self links and the next links of
lists start with [api] public_endpoint, or with what a trusted proxy named,
or are paths from the server's root; never with the Host a client sent."""
import pytest


def _self_links(api, path='/', **kwargs):
    versions = api.get(path, **kwargs).get_json()['versions']
    return [link['href'] for link in versions[0]['links']]


def _next_link(api, **kwargs):
    body = api.get('/v1/hosts?limit=1', **kwargs).get_json()
    return [link['href'] for link in body['links'] if link['rel'] == 'next']


@pytest.fixture
def proxied(api, conf):
    """The API with [oslo_middleware] enable_proxy_headers_parsing."""
    conf.config(enable_proxy_headers_parsing=True, group='oslo_middleware')
    return api


def test_links_never_name_the_host_a_client_sent(api):
    # Anyone can send any Host: a link under it would send the next
    # request wherever the sender chose.
    assert _self_links(api, base_url='http://evil.example:8799/') == [
        '/v1/']
    body = api.get('/v1/', base_url='http://evil.example:8799/').get_json()
    assert body['version']['links'] == [{'rel': 'self', 'href': '/v1/'}]
    marker = api.get('/v1/hosts?limit=1').get_json()['hosts'][0]['name']
    assert _next_link(api, base_url='http://evil.example/') == [
        '/v1/hosts?limit=1&marker=%s' % marker]


def test_links_keep_the_script_name_prefix(api):
    base = 'http://cloud.example/memory-aggregation/'
    assert _self_links(api, base_url=base) == ['/memory-aggregation/v1/']
    marker = api.get('/v1/hosts?limit=1').get_json()['hosts'][0]['name']
    assert _next_link(api, base_url=base) == [
        '/memory-aggregation/v1/hosts?limit=1&marker=%s' % marker]


def test_links_start_with_the_public_endpoint(api, conf):
    conf.config(public_endpoint='https://memagg.example/edge', group='api')
    conf.config(enable_proxy_headers_parsing=True, group='oslo_middleware')
    headers = {'X-Forwarded-Host': 'proxy.example', 'Host': 'evil.example'}
    assert _self_links(api, headers=headers) == [
        'https://memagg.example/edge/v1/']
    [link] = _next_link(api, headers=headers)
    assert link.startswith('https://memagg.example/edge/v1/hosts?limit=1&')


def test_forwarded_headers_are_ignored_unless_enabled(api):
    headers = {'X-Forwarded-Proto': 'https',
               'X-Forwarded-Host': 'cloud.example',
               'X-Forwarded-Prefix': '/memory-aggregation'}
    assert _self_links(api, headers=headers,
                       base_url='http://10.0.0.5:8799/') == ['/v1/']


def test_x_forwarded_headers(proxied):
    headers = {'X-Forwarded-Proto': 'https',
               'X-Forwarded-Host': 'cloud.example',
               'X-Forwarded-Prefix': '/memory-aggregation'}
    base = 'https://cloud.example/memory-aggregation/'
    assert _self_links(proxied, headers=headers) == [base + 'v1/']
    [link] = _next_link(proxied, headers=headers)
    assert link.startswith(base + 'v1/hosts?limit=1&marker=')
    # The link works: the proxy strips the prefix, the API follows it.
    path = link[len(base) - 1:]
    assert proxied.get(path, headers=headers).status_code == 200


def test_rfc7239_forwarded_header(proxied):
    headers = {'Forwarded': 'for=192.0.2.60;proto=https;host=cloud.example',
               'X-Forwarded-Prefix': '/memory-aggregation'}
    assert _self_links(proxied, headers=headers) == [
        'https://cloud.example/memory-aggregation/v1/']


def test_forwarded_prefix_adds_to_script_name(proxied):
    # A proxy that names no host: the Host is still the client's own.
    headers = {'X-Forwarded-Prefix': '/edge'}
    links = _self_links(proxied, headers=headers,
                        base_url='http://cloud.example/memory-aggregation/')
    assert links == ['/edge/memory-aggregation/v1/']
