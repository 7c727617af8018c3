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

"""memagg-api as an operator runs it: the console script, under uWSGI, with
a config file (noauth, SQLite holding memagg.tests.unit.api.data): version
discovery, /healthcheck, lists and their next links, links behind a proxy
and under a path prefix, bad options, and a prompt stop on SIGTERM."""
import os
import subprocess
import time
import urllib.parse

import pytest
import requests

from memagg.db import facade as db_facade
from memagg.tests.functional import service_procs
from memagg.tests import polling
from memagg.tests.unit.api import data

pytestmark = pytest.mark.functional

PREFIX = '/memory-aggregation'
START_TIMEOUT = 60
# Functional tests and the shared deployment stop services with SIGTERM.
STOP_WITHIN = 10


@pytest.fixture
def database(sqlite_db):
    """A SQLite file holding two hosts and their instances."""
    data.load()
    db_facade.dispose()
    return sqlite_db


def _config(tmp_path, database, api=None, **sections):
    port = service_procs.free_port()
    options = {'host': '127.0.0.1', 'port': port, 'auth_strategy': 'noauth',
               'workers': 2, 'threads': 2}
    options.update(api or {})
    config = service_procs.write_config(tmp_path / 'memagg.conf', dict({
        'DEFAULT': {'transport_url': 'fake://'},
        'database': {'connection': database},
        'api': options}, **sections))
    return config, 'http://127.0.0.1:%d' % port


def _start(tmp_path, args, health_url):
    proc = service_procs.Process('memagg-api', args,
                                 tmp_path / 'memagg-api.log')

    def healthy():
        assert proc.alive(), 'memagg-api exited:\n%s' % proc.log()
        return service_procs.answers(health_url)
    try:
        polling.wait_for(healthy, START_TIMEOUT,
                         message='memagg-api answering %s' % health_url)
    except BaseException:
        proc.stop()
        raise
    return proc


def _children(pid):
    """Pids of the processes whose parent is ``pid``."""
    found = []
    for entry in os.listdir('/proc'):
        if entry.isdigit():
            try:
                with open('/proc/%s/stat' % entry) as f:
                    stat = f.read()
            except OSError:
                continue
            # Fields after the command name: state, then the parent's pid.
            if int(stat.rpartition(')')[2].split()[1]) == pid:
                found.append(int(entry))
    return found


def _stop_promptly(proc):
    workers = _children(proc.proc.pid)
    started = time.monotonic()
    assert proc.stop(timeout=STOP_WITHIN) == 0, proc.log()
    assert time.monotonic() - started < STOP_WITHIN
    assert not [pid for pid in workers if os.path.exists('/proc/%d' % pid)]


def _self_link(url, headers=None):
    body = requests.get(url, headers=headers, timeout=10).json()
    document = body['versions'][0] if 'versions' in body else body['version']
    return [link['href'] for link in document['links']
            if link['rel'] == 'self']


def _hosts_by_next_links(url, headers=None):
    """Host names of every page from ``url``, following next links."""
    names = []
    while url:
        response = requests.get(url, headers=headers, timeout=10)
        assert response.status_code == 200, response.text
        body = response.json()
        names += [host['name'] for host in body['hosts']]
        nexts = [link['href'] for link in body['links']
                 if link['rel'] == 'next']
        # A link may be a path from the server's root: resolved as a
        # browser would, against the URL asked.
        url = urllib.parse.urljoin(response.url, nexts[0]) if nexts else None
    return names


@pytest.mark.slow
def test_serves_the_api_and_stops_on_sigterm(tmp_path, database):
    config, url = _config(tmp_path, database)
    # --config-dir reaches the workers too (files there come last).
    extra = tmp_path / 'memagg.conf.d'
    extra.mkdir()
    service_procs.write_config(extra / '50-limit.conf',
                               {'api': {'max_limit': 5}})
    proc = _start(tmp_path, ['--config-file', str(config),
                             '--config-dir', str(extra)],
                  url + '/healthcheck')
    try:
        assert len(_children(proc.proc.pid)) == 2, proc.log()
        # No [api] public_endpoint and no proxy: links are paths, never
        # under the Host header the client sent.
        assert _self_link(url + '/') == ['/v1/']
        assert _self_link(url + '/v1/') == ['/v1/']
        health = requests.get(url + '/healthcheck', timeout=10)
        assert health.status_code == 200
        assert health.headers['Content-Type'].startswith('text/plain')
        first = requests.get(url + '/v1/hosts?limit=1', timeout=10,
                             headers={'Host': 'evil.example'}).json()
        assert first['links'][0]['href'].startswith(
            '/v1/hosts?limit=1&marker=')
        assert _hosts_by_next_links(url + '/v1/hosts?limit=1') == [
            'host-1', 'host-2']
        too_many = requests.get(url + '/v1/hosts?limit=6', timeout=10)
        assert too_many.status_code == 400
        assert too_many.json()['errors'][0]['field'] == 'limit'
    finally:
        _stop_promptly(proc)


@pytest.mark.slow
def test_behind_a_proxy_that_strips_a_prefix(tmp_path, database):
    config, url = _config(tmp_path, database, oslo_middleware={
        'enable_proxy_headers_parsing': True})
    proc = _start(tmp_path, ['--config-file', str(config)],
                  url + '/healthcheck')
    headers = {'X-Forwarded-Proto': 'https',
               'X-Forwarded-Host': 'cloud.example',
               'X-Forwarded-Prefix': PREFIX}
    public = 'https://cloud.example' + PREFIX
    try:
        assert _self_link(url + '/', headers) == [public + '/v1/']
        assert _self_link(url + '/v1/', headers) == [public + '/v1/']
        body = requests.get(url + '/v1/hosts?limit=1', headers=headers,
                            timeout=10).json()
        assert body['links'][0]['href'].startswith(
            public + '/v1/hosts?limit=1&marker=')
        forwarded = {'Forwarded': 'for=192.0.2.1;proto=https;'
                                  'host=cloud.example'}
        assert _self_link(url + '/', forwarded) == [
            'https://cloud.example/v1/']
    finally:
        _stop_promptly(proc)


@pytest.mark.slow
def test_path_prefix_mounts_the_api_under_it(tmp_path, database):
    public = 'https://cloud.example' + PREFIX
    config, url = _config(tmp_path, database, api={
        'path_prefix': PREFIX, 'public_endpoint': public})
    base = url + PREFIX
    proc = _start(tmp_path, ['--config-file', str(config)],
                  base + '/healthcheck')
    try:
        # Links start with [api] public_endpoint, whatever URL was asked.
        assert _self_link(base + '/') == [public + '/v1/']
        assert _self_link(base) == [public + '/v1/']
        assert _self_link(base + '/v1/') == [public + '/v1/']
        first = requests.get(base + '/v1/hosts?limit=1', timeout=10).json()
        assert first['links'][0]['href'].startswith(
            public + '/v1/hosts?limit=1&marker=')
        assert [h['name'] for h in requests.get(
            base + '/v1/hosts', timeout=10).json()['hosts']] == [
            'host-1', 'host-2']
        # A load balancer probing the server itself needs no prefix.
        assert requests.get(url + '/healthcheck',
                            timeout=10).status_code == 200
    finally:
        _stop_promptly(proc)


@pytest.mark.parametrize('option, value, message', [
    ('workers', '0', 'Should be greater than or equal to 1'),
    ('threads', 'many', "invalid literal for int() with base 10: 'many'"),
    ('path_prefix', 'memory-aggregation/',
     'give a path such as /memory-aggregation (starting with "/", without '
     'a trailing "/"), or leave it empty'),
])
def test_bad_option_fails_at_start_naming_it(tmp_path, option, value,
                                             message):
    config, _ = _config(tmp_path, 'sqlite://', api={option: value})
    result = subprocess.run(
        [os.path.join(service_procs.BIN_DIR, 'memagg-api'),
         '--config-file', str(config)],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert result.returncode != 0
    assert result.stderr.strip().splitlines()[-1] == (
        "memagg-api: error: Invalid value for '[api] %s': %s"
        % (option, message))


@pytest.mark.slow
def test_command_line_logging_options_reach_the_workers(tmp_path):
    # Nothing listens on the database port: the worker logs an error.
    unreachable = 'mysql+pymysql://root@127.0.0.1:%d/memagg' % (
        service_procs.free_port())
    config, url = _config(tmp_path, unreachable)
    log_file = tmp_path / 'api.log'
    proc = _start(tmp_path, ['--config-file', str(config),
                             '--log-file', str(log_file)],
                  url + '/healthcheck')
    try:
        assert requests.get(url + '/v1/hosts', timeout=30).status_code == 503
        lines = polling.wait_for(
            lambda: [line for line in log_file.read_text().splitlines()
                     if 'Database unreachable' in line],
            10, message='the worker logging to --log-file')
        # Written by a worker, not by the master.
        assert ' %d ' % proc.proc.pid not in lines[0]
    finally:
        _stop_promptly(proc)


@pytest.mark.slow
def test_sigterm_while_workers_load_the_app_exits_0(tmp_path, database):
    config, _ = _config(tmp_path, database)
    proc = service_procs.Process('memagg-api', ['--config-file', str(config)],
                                 tmp_path / 'memagg-api.log')
    # Workers import memagg.wsgi.api after they are spawned (lazy-apps);
    # the stop lands in that import.
    polling.wait_for(lambda: 'spawned uWSGI worker 2' in proc.log(),
                     START_TIMEOUT, interval=0.01,
                     message='memagg-api spawning its workers')
    _stop_promptly(proc)
