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

"""Fixtures of the Nova filter's and weigher's tests: Nova's own CONF with
[memagg] pointing at memagg's real API, served over HTTP in this process
(the client tests' ``server`` fixture, on memagg.tests.unit.api.data's
cluster), and the count of the calls it answered. Nova's objects and
memagg-compute's reports are made by memagg.tests.unit.nova.cluster.
"""
import datetime
import logging

import nova.conf
from oslo_config import fixture as config_fixture
from oslo_utils import timeutils
import pytest

# Imported for its side effect: [memagg] registered on Nova's CONF.
from memagg.nova import filters  # noqa: F401
from memagg.tests.unit.client.conftest import make_client  # noqa: F401
from memagg.tests.unit.client.conftest import server  # noqa: F401


@pytest.fixture
def nova_conf():
    """Nova's CONF (oslo.config's global object); overrides undone after
    the test."""
    fixture = config_fixture.Config(nova.conf.CONF)
    fixture.setUp()
    yield fixture
    fixture.cleanUp()


@pytest.fixture
def memagg_options(nova_conf, server):  # noqa: F811
    """Nova's [memagg] pointed at the served API, without Keystone (as its
    noauth mode); call it with more [memagg] options to set them."""
    url, _ = server

    def set_options(**options):
        nova_conf.config(group='memagg', **options)

    set_options(auth_type='none', endpoint_override=url)
    return set_options


@pytest.fixture
def host_usage_calls(server):  # noqa: F811
    """How many GET /v1/host_usages the served API has answered so far."""
    _, recorder = server
    return lambda: sum(1 for _, path, _ in recorder.requests
                       if path == '/v1/host_usages')


@pytest.fixture
def warnings_logged(caplog):
    """The WARNING lines memagg.nova logged so far."""
    return lambda: [r.getMessage() for r in caplog.records
                    if r.name.startswith('memagg.nova')
                    and r.levelno == logging.WARNING]


@pytest.fixture
def frozen_clock(monkeypatch):
    """oslo.utils' clock stopped on a whole second for the test, so the
    age of a report that a message prints does not depend on how long the
    test took to get there. (timeutils.set_time_override would ignore
    utcnow's with_timezone, which memagg.nova asks for.)"""
    now = timeutils.utcnow().replace(microsecond=0)
    monkeypatch.setattr(
        timeutils, 'utcnow',
        lambda with_timezone=False:
            now.replace(tzinfo=datetime.timezone.utc) if with_timezone
            else now)
