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

"""Admin → Memory holds a real fleet: 1,000 hosts and 10,000 instances
(benchmarks/_api_data.py, with an hour of WSS samples) in MariaDB, served
by memagg-api behind a Keystone of this module's own (its catalog names
this API alone), read by Horizon in headless chromium.

The admin page's server time (the GET of the page, made from here with
the browser's session cookie, so the time is Horizon's and memagg-api's
work and not the browser's drawing) is printed beside the target,
MAX_SERVER_S on a quiet machine, and must stay within MAX_SETTINGS_RATIO
times that of a Horizon page that asks memagg nothing. The pages must
show what the API serves (a page of hosts, sorted and filtered by the
API) and their screenshots the bars' colours.

In the host lane: it measures time, so it runs alone.
"""
import os
import subprocess
import sys
import time
import urllib.parse

import pytest
import requests

from memaggclient import client as memagg_client
from memagg.dashboard import charts
from memagg.demo import keystone as demo_keystone
from memagg.tests import db_backends
from memagg.tests.functional import horizon as horizon_browser
from memagg.tests.functional import keystone as keystone_fixture
from memagg.tests.functional import service_procs
from memagg.tests import polling

pytestmark = [pytest.mark.functional, pytest.mark.slow, pytest.mark.host]

HOSTS = 1000
INSTANCES = 10000
SAMPLES = 12
MAX_SERVER_S = 2.0
# The admin page's server time at most this many times that of Horizon's
# settings page (measured 0.9-1.5x here, beside the other lane's tests).
MAX_SETTINGS_RATIO = 2.5
TIMED_GETS = 3
LOAD_TIMEOUT = 900
START_TIMEOUT = 60
# The admin's page size, Horizon's default API_RESULT_PAGE_SIZE.
PAGE_SIZE = 20
BENCHMARKS = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir,
                          os.pardir, 'benchmarks')


def _run(*args, timeout=120):
    result = subprocess.run([sys.executable] + list(args),
                            capture_output=True, text=True, timeout=timeout,
                            stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr[-4000:]
    return result.stdout


@pytest.fixture(scope='module')
def fleet(tmp_path_factory):
    """The Keystone of the module, with memagg-api (keystonemiddleware)
    in its catalog over a MariaDB database of the fleet."""
    directory = tmp_path_factory.mktemp('fleet')
    port = service_procs.free_port()
    url = 'http://127.0.0.1:%d' % port
    with keystone_fixture.running(
            tmp_path_factory.mktemp('fleet-keystone')) as keystone, \
            db_backends.provisioned('mysql', directory) as database_url:
        config = directory / 'memagg.conf'
        service_procs.write_config(config, {
            'DEFAULT': {'service_down_time': 3600},
            'database': {'connection': database_url},
            'api': {'host': '127.0.0.1', 'port': port,
                    'auth_strategy': 'keystone'},
            'keystone_authtoken': keystone.authtoken_options()})
        _run('-m', 'memagg.cmd.manage', '--config-file', str(config),
             'db', 'upgrade')
        print(_run(os.path.join(BENCHMARKS, '_api_data.py'),
                   '--config-file', str(config), '--hosts', str(HOSTS),
                   '--instances', str(INSTANCES), '--samples', str(SAMPLES),
                   timeout=LOAD_TIMEOUT).strip())
        keystone.register_endpoint('memory-aggregation', 'memagg', url)
        api = service_procs.Process('memagg-api', ['--config-file',
                                                   str(config)],
                                    directory / 'memagg-api.log')
        try:
            polling.wait_for(lambda: service_procs.answers(url + '/'),
                             START_TIMEOUT,
                             message='memagg-api answering on ' + url)
            yield keystone
        finally:
            api.stop()


@pytest.fixture(scope='module')
def browser(fleet, tmp_path_factory):
    with horizon_browser.serving(tmp_path_factory.mktemp('horizon'),
                                 fleet.auth_url) as url:
        browser = horizon_browser.Browser(
            url, tmp_path_factory.mktemp('screenshots'))
        try:
            browser.login(fleet.admin, '/admin/memory/')
            yield browser
        finally:
            browser.quit()


@pytest.fixture(scope='module')
def admin_api(fleet):
    return memagg_client.Client(fleet.session(fleet.admin),
                                interface='public',
                                region_name=demo_keystone.REGION)


def _server_seconds(browser, path):
    """Seconds each of TIMED_GETS GETs of ``path`` took, made with the
    browser's session: the page as Horizon renders it, without the
    browser's own loading and drawing."""
    cookies = {c['name']: c['value'] for c in browser.driver.get_cookies()}
    times = []
    for _ in range(TIMED_GETS):
        started = time.perf_counter()
        resp = requests.get(browser.url + path, cookies=cookies, timeout=60,
                            allow_redirects=False)
        times.append(time.perf_counter() - started)
        assert resp.status_code == 200, resp.status_code
    return times


def _api_seconds(call):
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def test_admin_page_renders_a_page_of_a_thousand_hosts_in_time(
        browser, admin_api):
    # What the page asks memagg-api, timed alone, and a page of Horizon's
    # that asks memagg nothing: where the time goes if it is too long.
    settings = min(_server_seconds(browser, '/settings/'))
    print('memagg-api: a page of host usages %.2f s, the cloud now %.2f s; '
          'Horizon\'s settings page %.2f s' % (
              _api_seconds(lambda: admin_api.host_usages.page(
                  limit=PAGE_SIZE)),
              _api_seconds(lambda: admin_api.cloud_usage.get(points=1)),
              settings))
    times = _server_seconds(browser, '/admin/memory/')
    print('admin page, %d hosts and %d instances: server time %s s '
          '(best %.2f s; target < %.1f s on a quiet machine), %.1fx '
          'Horizon\'s settings page' % (
              HOSTS, INSTANCES, ', '.join('%.2f' % t for t in times),
              min(times), MAX_SERVER_S, min(times) / settings))
    # The best of a few against a Horizon page that asks memagg nothing,
    # timed beside it: a ratio, which the machine's other work (the
    # parallel lane) moves far less than either time. A page that read
    # every host, rather than one page of them, would be many times it.
    assert min(times) < MAX_SETTINGS_RATIO * settings

    browser.open('/admin/memory/')
    assert browser.attr('#memagg-hosts', 'data-hosts') == str(HOSTS)
    shown = [svg.get_attribute('data-host')
             for svg in browser.find_all('svg.memagg-host')]
    assert shown == ['bench-host-%04d' % h for h in range(PAGE_SIZE)]
    now = admin_api.cloud_usage.get(points=1)['now']
    assert int(browser.attr('#memagg-freed', 'data-mb')) == now['freed_mb']
    assert int(browser.attr('#memagg-emptiable', 'data-hosts')) == \
        now['emptiable_hosts'] > 0
    browser.screenshot('fleet-admin-memory', [
        colour for key, _, colour in charts.HOST_BARS
        if key not in ('lent_mb', 'borrowed_mb')])


def test_hosts_sorted_filtered_and_paged_by_the_api(browser, admin_api):
    browser.open('/admin/memory/?sort=wss_maxavg_mb&dir=desc')
    expected = admin_api.host_usages.page(
        limit=2 * PAGE_SIZE, sort_key='wss_maxavg_mb', sort_dir='desc').items
    shown = [svg.get_attribute('data-host')
             for svg in browser.find_all('svg.memagg-host')]
    assert shown == [u['host'] for u in expected[:PAGE_SIZE]]
    top = expected[0]
    assert int(browser.attr('svg.memagg-host[data-host="%s"] '
                            'g[data-series="wss_maxavg_mb"]' % top['host'],
                            'data-mb')) == top['wss_maxavg_mb']
    # Next keeps the order.
    browser.find('a[href^="?marker="]').click()
    polling.wait_for(lambda: 'marker=' in browser.driver.current_url, 30,
                     message='the next page')
    shown = [svg.get_attribute('data-host')
             for svg in browser.find_all('svg.memagg-host')]
    assert shown == [u['host'] for u in expected[PAGE_SIZE:]]
    assert 'dir=desc' in urllib.parse.urlsplit(
        browser.driver.current_url).query

    # Horizon's server filter: the API keeps the hosts whose name holds
    # the text.
    browser.open('/admin/memory/')
    field = browser.find('input[name="hosts__filter__q"]')
    field.send_keys('host-099')
    field.submit()
    polling.wait_for(lambda: len(browser.find_all('svg.memagg-host')) == 10,
                     30, message='the filtered hosts')
    assert sorted(svg.get_attribute('data-host') for svg in
                  browser.find_all('svg.memagg-host')) == [
        'bench-host-%04d' % h for h in range(990, 1000)]
    browser.screenshot('fleet-hosts-filtered', [])


def test_cloud_over_the_last_hour(browser, admin_api):
    times = _server_seconds(browser, '/admin/memory/cloud/?range=1h')
    print('cloud page, %d samples an instance: server time %s s'
          % (SAMPLES, ', '.join('%.2f' % t for t in times)))
    browser.open('/admin/memory/cloud/?range=1h')
    freed = browser.find_all(
        '#memagg-cloud-memory g[data-series="freed_mb"] circle')
    # The newest samples: the oldest may have left the hour while the
    # fleet loaded.
    assert len(freed) >= SAMPLES // 2
    hosts = [int(dot.get_attribute('data-mb')) for dot in browser.find_all(
        '#memagg-cloud-hosts g[data-series="hosts"] circle')]
    assert set(hosts) == {HOSTS}
    assert len(browser.find_all('#memagg-cloud-memory .memagg-x-tick')) >= 3
    browser.screenshot('fleet-cloud', [
        c for _, _, c in charts.CLOUD_MEMORY_SERIES + charts.CLOUD_HOST_SERIES
    ])
