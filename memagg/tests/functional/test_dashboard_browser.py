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

"""memagg's Horizon panels in a real browser: Horizon 27 served by Django's
runserver from this venv, with memagg's "enabled" files and policy snippet
loaded as a deployment loads them, logging in through the session's real
Keystone and reading the session's real memagg-api (the ``deployment``
fixture), driven by Debian's headless chromium through Selenium.

One Horizon process and one browser for the module; each test opens its
pages, checks that the charts carry the numbers the API serves (read here
through memagg's client; the checks test_aio makes of the running demo
too, memagg.tests.functional.panel_checks), and saves a screenshot that it
checks is a real, non-blank picture.

Without chromium, chromedriver or Selenium the tests skip, except under CI
(CI=true), where a missing browser is a broken setup and fails them.
"""
import pytest

from memaggclient import client as memagg_client
from memagg.dashboard import charts
from memagg.demo import keystone as demo_keystone
from memagg.tests.functional import horizon as horizon_browser
from memagg.tests.functional import panel_checks
from memagg.tests import polling

pytestmark = [pytest.mark.functional, pytest.mark.slow]


@pytest.fixture(scope='module')
def horizon(deployment, tmp_path_factory):
    """Horizon's URL, served by one runserver for the module."""
    with horizon_browser.serving(tmp_path_factory.mktemp('horizon'),
                                 deployment.keystone.auth_url) as url:
        yield url


@pytest.fixture(scope='module')
def browser(horizon, tmp_path_factory):
    browser = horizon_browser.Browser(horizon,
                                      tmp_path_factory.mktemp('screenshots'))
    try:
        yield browser
    finally:
        browser.quit()


@pytest.fixture(scope='module')
def admin_api(deployment):
    """memagg's client as the cloud's admin: what the pages must show."""
    return memagg_client.Client(
        deployment.keystone.session(deployment.keystone.admin),
        interface='public', region_name=demo_keystone.REGION)


def test_admin_memory_host_bars_carry_the_api_numbers(browser, deployment,
                                                      admin_api):
    browser.login(deployment.keystone.admin, '/admin/memory/')
    _, pool = panel_checks.host_bars(browser, admin_api, deployment.hosts)
    # The seeded grant: the second host lends to the first.
    assert pool[deployment.hosts[1]]['lent_mb'] > 0
    # The seeded 256 MiB lent and borrowed are a pixel wide, blended into
    # the track: the wide bars' colours are the ones to look for.
    browser.screenshot('admin-memory', [
        colour for key, _, colour in charts.HOST_BARS
        if key not in ('lent_mb', 'borrowed_mb')])


def test_admin_hosts_sort_on_the_server(browser, deployment, admin_api):
    browser.login(deployment.keystone.admin, '/admin/memory/')
    # Ascending first, then descending on a second click.
    for direction in ('asc', 'desc'):
        browser.find('a.memagg-sort[data-sort="wss_maxavg_mb"]').click()
        polling.wait_for(lambda: ('dir=%s' % direction) in
                         browser.driver.current_url, 30,
                         message='sorted %s' % direction)
        shown = [svg.get_attribute('data-host')
                 for svg in browser.find_all('svg.memagg-host')]
        expected = [u['host'] for u in admin_api.host_usages.page(
            sort_key='wss_maxavg_mb', sort_dir=direction).items]
        assert shown == expected[:len(shown)]


def test_cloud_over_time(browser, deployment, admin_api):
    browser.login(deployment.keystone.admin, '/admin/memory/')
    panel_checks.cloud_over_time(browser, admin_api, '7d')
    browser.screenshot('admin-cloud', [
        c for _, _, c in charts.CLOUD_MEMORY_SERIES])


def test_instance_chart_carries_the_wss_history(browser, deployment,
                                                admin_api):
    uuid = deployment.instances['admin'][0]
    # A week: the seeded samples are as old as the session.
    browser.login(deployment.keystone.admin,
                  '/admin/memory/instances/%s/?range=7d' % uuid)
    samples = list(admin_api.instances.wss(uuid).all_items())
    assert samples
    for key in ('wss_mb', 'target_mb', 'wss_maxavg_mb', 'reclaimed_mb'):
        shown = [(int(dot.get_attribute('data-mb')),
                  dot.get_attribute('data-at'))
                 for dot in browser.find_all(
                     '#memagg-history g[data-series="%s"] circle' % key)]
        assert shown == [(s[key], s['sampled_at']) for s in samples]
    instance = admin_api.instances.get(uuid)
    assert browser.attr('#memagg-history g[data-series="booked_mb"]',
                        'data-latest-mb') == str(instance['booked_mb'])
    assert browser.find('#memagg-estimator').text == samples[-1]['estimator']
    assert instance['local_policy']
    assert (browser.find('#memagg-local-policy').text
            == instance['local_policy'])
    assert browser.find_all('#memagg-history .memagg-x-tick')
    assert (browser.find('#memagg-instance-name').text ==
            instance['name'])
    # The seeded grant lends it memory: the remote line ends on it.
    lent = sum(g['granted_mb'] for g in admin_api.grants.list(
        instance_uuid=uuid).all_items() if g['status'] == 'active')
    assert lent > 0
    assert browser.attr('#memagg-history g[data-series="remote_mb"]',
                        'data-latest-mb') == str(lent)
    browser.screenshot('admin-instance', [
        c for key, _, c in charts.HISTORY_SERIES if key != 'reclaimed_mb'])


def test_reservoir_lists_the_grant_with_its_donors(
        browser, deployment, admin_api):
    browser.login(deployment.keystone.admin, '/admin/memory/reservoir/')
    [uuid] = deployment.grants
    grant = admin_api.grants.get(uuid)
    row = '.memagg-grants tr[data-uuid="%s"]' % uuid
    assert browser.find(row + ' .memagg-donors').text == ', '.join(
        sorted({slab['donor_host'] for slab in grant['slabs']}))
    assert browser.attr(row, 'data-granted-mb') == str(grant['granted_mb'])
    # Where its slabs are: on donors (L1) or in the local copy only (L2).
    assert (browser.attr(row + ' .memagg-tiers', 'data-l1-mb'),
            browser.attr(row + ' .memagg-tiers', 'data-l2-mb')) == (
        str(grant['l1_mb']), str(grant['l2_mb']))
    assert grant['l1_mb'] > 0
    assert browser.find(row + ' .memagg-grant-instance').text == \
        admin_api.instances.get(grant['instance_uuid'])['name']
    total = admin_api.reservoir.get()
    assert browser.attr('#memagg-reservoir-total', 'data-free-mb') == str(
        total['free_reservoir_mb'])
    consumer = grant['consumer_host']
    assert browser.find('.memagg-reservoir tr[data-host="%s"] '
                        '.memagg-local-tier' % consumer).text == str(
        {h['host']: h['local_tier_mb'] for h in total['hosts']}[consumer])
    browser.screenshot('admin-reservoir', [])


def test_audit_created_from_the_panel_shows_its_plan_by_name(
        browser, deployment, admin_api):
    browser.login(deployment.keystone.admin, '/admin/memory/audits/')
    panel_checks.audit_from_the_panel(browser, admin_api)
    browser.screenshot('admin-audit', [])


def test_member_sees_only_own_instances(browser, deployment, admin_api):
    member = deployment.keystone.member
    browser.login(member, '/project/memory/')
    shown = {row.get_attribute('data-uuid')
             for row in browser.find_all('.memagg-instances tr[data-uuid]')}
    assert set(deployment.instances['member']) <= shown
    assert all(admin_api.instances.get(uuid)['project_id'] ==
               member.project_id for uuid in shown)
    browser.screenshot('project-memory', [])
    uuid = deployment.instances['member'][0]
    browser.open('/project/memory/instances/%s/?range=7d' % uuid)
    wss = [int(dot.get_attribute('data-mb')) for dot in browser.find_all(
        '#memagg-history g[data-series="wss_mb"] circle')]
    assert wss == [s['wss_mb']
                   for s in admin_api.instances.wss(uuid).all_items()]
    # A member may not list grants: remote memory is not drawn.
    assert browser.attr('#memagg-history g[data-series="remote_mb"]',
                        'data-latest-mb') == 'None'
    browser.screenshot('project-instance', [
        c for key, _, c in charts.HISTORY_SERIES
        if key not in ('remote_mb', 'reclaimed_mb')])
    # Admin → Memory is not for a member: Horizon's "not authorized" page.
    browser.open('/admin/memory/')
    assert 'not authorized' in browser.find('body').text
    assert not browser.find_all('.memagg-host')
