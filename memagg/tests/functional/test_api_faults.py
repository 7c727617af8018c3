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

"""Database faults against a real memagg-api process: 503 + Retry-After,
fast, and recovery when the database comes back.

The database is real MariaDB, reached through a TCP relay in a process this
test owns, so "the database went away" is a real loss of connectivity.
"""
import contextlib
import subprocess
import sys
import time

import pytest
import requests
import sqlalchemy
from sqlalchemy import pool

from memagg.tests.functional import service_procs
from memagg.tests import polling
from memagg.tests.unit.api import data

pytestmark = [pytest.mark.functional, pytest.mark.slow]

RETRY_AFTER = 7


@contextlib.contextmanager
def memagg_api(tmp_path, connection):
    """Run memagg-api (python -m memagg.cmd.api) with a config file; yield
    its base URL once it answers GET /."""
    port = service_procs.free_port()
    config = tmp_path / 'memagg.conf'
    config.write_text(
        '[api]\nhost = 127.0.0.1\nport = %d\nauth_strategy = noauth\n'
        'db_retry_after = %d\n[database]\nconnection = %s\n'
        % (port, RETRY_AFTER, connection))
    log_path = tmp_path / 'memagg-api.log'
    log = open(log_path, 'wb')
    process = subprocess.Popen(
        [sys.executable, '-m', 'memagg.cmd.api', '--config-file',
         str(config)], stdout=log, stderr=subprocess.STDOUT)
    url = 'http://127.0.0.1:%d' % port

    def answering():
        assert process.poll() is None, (
            'memagg-api exited: %s' % log_path.read_text())
        return service_procs.answers(url + '/')
    try:
        polling.wait_for(answering, 60, message='memagg-api answering')
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


def _assert_503(response):
    assert response.status_code == 503, response.text
    assert response.headers['Retry-After'] == str(RETRY_AFTER)
    error = response.json()['errors'][0]
    assert error['code'] == 'memagg.database_unavailable'
    assert 'Traceback' not in response.text


def test_database_down_at_start_is_503_at_once(tmp_path):
    url_of_nothing = 'mysql+pymysql://root@127.0.0.1:%d/memagg' % (
        service_procs.free_port())
    with memagg_api(tmp_path, url_of_nothing) as url:
        started = time.monotonic()
        response = requests.get(url + '/v1/instances', timeout=30)
        elapsed = time.monotonic() - started
    _assert_503(response)
    # oslo.db's default connection retries would take ~100 s.
    assert elapsed < 5


def _serving(url):
    """GET /v1/hosts's response when it is 200, else None; a request the
    API has not answered within a few seconds counts as not yet."""
    try:
        response = requests.get(url + '/v1/hosts', timeout=5)
    except requests.Timeout:
        return None
    return response if response.status_code == 200 else None


def test_database_lost_then_back(tmp_path, mysql_db):
    data.load()
    relay = service_procs.ForwarderProcess(('127.0.0.1', 3306))
    relay.start()
    via_relay = mysql_db.replace('@127.0.0.1:3306/',
                                 '@127.0.0.1:%d/' % relay.port)
    try:
        with memagg_api(tmp_path, via_relay) as url:
            # CI runs of the whole suite saw requests of this test hang
            # (never a run of it alone) while the relay lived in pytest's
            # process; it has its own now. A request that hangs is
            # retried, and a failure shows the API's log and MariaDB's
            # sessions.
            try:
                hosts = polling.wait_for(
                    lambda: _serving(url), 60, interval=0.5,
                    message='API serving through the relay')
            except AssertionError as exc:
                pytest.fail('%s; %s' % (exc, _diagnosis(tmp_path)))
            assert len(hosts.json()['hosts']) == 2

            relay.stop()
            started = time.monotonic()
            try:
                lost = requests.get(url + '/v1/hosts', timeout=10)
            except requests.Timeout:
                pytest.fail('no answer within 10 s with the database gone; '
                            '%s' % _diagnosis(tmp_path))
            _assert_503(lost)
            assert time.monotonic() - started < 5

            relay.start()
            polling.wait_for(lambda: _serving(url), 60, interval=0.5,
                             message='API serving again')
    finally:
        relay.stop()


def _diagnosis(tmp_path, lines=60):
    """The tail of memagg-api's log and MariaDB's sessions."""
    text = (tmp_path / 'memagg-api.log').read_text(errors='replace')
    engine = sqlalchemy.create_engine(
        'mysql+pymysql://root@127.0.0.1:3306/', poolclass=pool.NullPool)
    with engine.connect() as connection:
        sessions = connection.execute(
            sqlalchemy.text('SHOW FULL PROCESSLIST')).fetchall()
    return 'memagg-api log:\n%s\nMariaDB sessions:\n%s' % (
        '\n'.join(text.splitlines()[-lines:]),
        '\n'.join(repr(tuple(row)) for row in sessions))
