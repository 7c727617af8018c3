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

"""memaggclient.osc.plugin: the version option and the client it builds
from the OpenStack client's ClientManager."""
import argparse
import types

import pytest
from keystoneauth1 import session as ks_session

from memaggclient import exceptions
from memaggclient import http
from memaggclient.osc import plugin


def _manager(version, config):
    return types.SimpleNamespace(
        _api_version={plugin.API_NAME: version}, session=ks_session.Session(),
        interface='internal', region_name='RegionTwo',
        get_configuration=lambda: config)


LATEST = http.version_string(http.MAX_VERSION)
BEYOND = '%d.%d' % (http.MAX_VERSION[0], http.MAX_VERSION[1] + 1)
EVERY = ', '.join('1.%d' % minor for minor in range(http.MAX_VERSION[1] + 1))


@pytest.mark.parametrize('version', ['1', '1.0', '1.3', '1.5', '1.8', LATEST])
def test_versions_the_client_speaks_are_accepted(version):
    assert plugin.check_api_version(version) is True


@pytest.mark.parametrize('version', ['2', BEYOND, 'latest', '1.x'])
def test_other_versions_are_refused_in_one_line(version):
    with pytest.raises(exceptions.UnsupportedVersion) as caught:
        plugin.check_api_version(version)
    assert str(caught.value) == (
        '--os-memagg-api-version %s is not supported: give one of 1, %s '
        '(1, the default, is the newest both sides support)'
        % (version, EVERY))


def test_the_option_defaults_to_the_environment(monkeypatch):
    monkeypatch.setenv('OS_MEMAGG_API_VERSION', '1.1')
    parser = plugin.build_option_parser(argparse.ArgumentParser())
    assert parser.parse_args([]).os_memagg_api_version == '1.1'
    monkeypatch.delenv('OS_MEMAGG_API_VERSION')
    parser = plugin.build_option_parser(argparse.ArgumentParser())
    assert parser.parse_args([]).os_memagg_api_version == '1'


@pytest.mark.parametrize('config', [
    {'auth': {'endpoint': 'http://memagg.example:8799'}},
    {'memory_aggregation_endpoint_override': 'http://memagg.example:8799',
     'auth': {}},
])
def test_make_client_honours_an_endpoint_and_the_version(config):
    client = plugin.make_client(_manager('1.2', config))

    assert client.http.endpoint == 'http://memagg.example:8799'
    assert client.http._requested == (1, 2)


def test_the_default_version_is_negotiated():
    client = plugin.make_client(_manager('1', {'auth': {}}))

    assert client.http._requested is None
