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

"""Fixtures of the client's tests: the real API app (noauth, SQLite,
memagg.tests.unit.api.data) served over HTTP in this process, and a Client
with a keystoneauth session pointed at it."""
import threading

import pytest
from keystoneauth1 import session as ks_session

from memagg.api import app as api_app
from memaggclient import client as memagg_client
from memagg.conf import CONF
from memagg.tests.unit.api import data
from memagg.tests.unit.api import live
from memagg.tests.rpc_fixtures import fake_rpc  # noqa: F401
from memagg.tests.unit.api.reservoir_scheduler import scheduler  # noqa: F401,E501
from memagg.tests.unit.scheduler.reservoir_fixtures import reservoir_opts  # noqa: F401,E501


class Recorder:
    """WSGI middleware that keeps each request's method, path and
    OpenStack-API-Version header."""

    def __init__(self, application):
        self.application = application
        self.requests = []
        self._lock = threading.Lock()

    def __call__(self, environ, start_response):
        with self._lock:
            self.requests.append((environ['REQUEST_METHOD'],
                                  environ['PATH_INFO'],
                                  environ.get('HTTP_OPENSTACK_API_VERSION')))
        return self.application(environ, start_response)


@pytest.fixture
def server(conf, sqlite_db):
    """The API served on a loopback port; yields (url, Recorder)."""
    conf.config(auth_strategy='noauth', group='api')
    data.load()
    recorder = Recorder(api_app.create_app(CONF))
    with live.serving(recorder) as url:
        yield url, recorder


@pytest.fixture
def make_client(server):
    """Build a Client of the served API: make_client(api_version=None,
    project=None, roles=None); project and roles act as a non-admin
    (noauth's X-Project-Id and X-Roles)."""
    url, _ = server

    def make(api_version=None, project=None, roles=None):
        headers = {}
        if project:
            headers = {'X-Project-Id': project, 'X-Roles': roles}
        return memagg_client.Client(
            ks_session.Session(), api_version=api_version,
            endpoint_override=url, additional_headers=headers)
    return make


@pytest.fixture
def memagg(make_client):
    """A Client of the served API as its admin, at the default version."""
    return make_client()
