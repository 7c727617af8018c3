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

"""Fixtures of the API unit tests: the full WSGI app on a migrated SQLite
database, driven through Flask's test client (no server)."""
import pytest
from werkzeug import test as werkzeug_test

from memagg.api import app as api_app
from memagg.conf import CONF
from memagg.tests.rpc_fixtures import fake_rpc  # noqa: F401
from memagg.tests.rpc_fixtures import unreachable_bus  # noqa: F401
from memagg.tests.unit.api import data
# The real scheduler manager behind the grant routes, for the modules that
# ask for it.
from memagg.tests.unit.api.reservoir_scheduler import scheduler  # noqa: F401,E501
from memagg.tests.unit.scheduler.reservoir_fixtures import reservoir_opts  # noqa: F401,E501


class Client(werkzeug_test.Client):
    """A client of the API that acts as a given project and roles."""

    def as_(self, project, roles, path, **kwargs):
        headers = dict(kwargs.pop('headers', {}),
                       **{'X-Project-Id': project, 'X-Roles': roles})
        return self.get(path, headers=headers, **kwargs)


@pytest.fixture
def api(conf, sqlite_db):
    """A noauth API client over a database holding memagg.tests.unit.api.data
    (admin of project 'admin' unless the request says otherwise)."""
    conf.config(auth_strategy='noauth', group='api')
    data.load()
    return Client(api_app.create_app(CONF))


@pytest.fixture
def unreachable_bus_api(conf, sqlite_db, unreachable_bus):  # noqa: F811
    """The ``api`` fixture's client, with RabbitMQ's URL pointing at a port
    nothing listens on: every cast to memagg-scheduler fails after its
    bounded retries (their waits recorded in ``unreachable_bus``)."""
    conf.config(auth_strategy='noauth', group='api')
    data.load()
    return Client(api_app.create_app(CONF))
