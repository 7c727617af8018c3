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
through memagg's client), and saves a screenshot that it checks is a real,
non-blank picture.

Without chromium, chromedriver or Selenium the tests skip, except under CI
(CI=true), where a missing browser is a broken setup and fails them.
"""
import io
import os
import pathlib
import shutil
import tempfile

import pytest

from memaggclient import client as memagg_client
from memagg import dashboard
from memagg.dashboard import charts
from memagg.dashboard import enabled as memagg_enabled
from memagg.tests.functional import keystone as keystone_fixture
from memagg.tests.functional import service_procs
from memagg.tests import polling

pytestmark = [pytest.mark.functional, pytest.mark.slow]

CHROMIUM = '/usr/bin/chromium'
CHROMEDRIVER = '/usr/bin/chromedriver'
# The network is closed: without these Chromium stalls on connections to
# Google's services (updates, sync, field trials).
CHROMIUM_FLAGS = (
    '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic',
    '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync',
    '--window-size=1280,1400')
START_TIMEOUT = 120
PAGE_TIMEOUT = 60
AUDIT_TIMEOUT = 60

# Horizon's settings import local.local_settings from sys.path: the
# operator's file, here pointing at the session's Keystone and keeping
# everything Horizon writes in the test's directory.
_LOCAL_SETTINGS = """\
DEBUG = False
ALLOWED_HOSTS = ['127.0.0.1']
SECRET_KEY = {secret!r}
LOCAL_PATH = {dir!r}
OPENSTACK_KEYSTONE_URL = {auth_url!r}
OPENSTACK_KEYSTONE_DEFAULT_ROLE = 'member'
STATIC_ROOT = {dir!r} + '/static'
COMPRESS_ROOT = STATIC_ROOT
COMPRESS_OFFLINE = False
CACHES = {{'default': {{
    'BACKEND': 'django.core.cache.backends.locmem.LocMemCache'}}}}
# A token with its catalog outgrows a signed cookie: sessions in files.
SESSION_ENGINE = 'django.contrib.sessions.backends.file'
SESSION_FILE_PATH = {dir!r}
"""
# The settings module: memagg's enabled files join
# openstack_dashboard/local/enabled and its snippet runs as if it were in
# local_settings.d, which is what installing them there does.
_SETTINGS = """\
from openstack_dashboard.local import enabled as _local_enabled
_local_enabled.__path__.append({enabled!r})
from openstack_dashboard.settings import *  # noqa
exec(open({snippet!r}).read())
"""


def _require_browser():
    missing = [path for path in (CHROMIUM, CHROMEDRIVER)
               if not os.path.exists(path)]
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append('selenium (test-requirements.txt)')
    if not missing:
        return
    message = ('no %s: run ./tools/setup.sh to install it'
               % ', '.join(missing))
    if keystone_fixture.in_ci():
        pytest.fail(message + ' (CI must test the panels in a browser)')
    pytest.skip(message)


@pytest.fixture(scope='module')
def horizon(deployment, tmp_path_factory):
    """Horizon's URL, served by one runserver for the module."""
    _require_browser()
    directory = tmp_path_factory.mktemp('horizon')
    (directory / 'local').mkdir()
    (directory / 'local' / '__init__.py').write_text('')
    (directory / 'local' / 'local_settings.py').write_text(
        _LOCAL_SETTINGS.format(secret=os.urandom(16).hex(),
                               dir=str(directory),
                               auth_url=deployment.keystone.auth_url))
    snippet = (pathlib.Path(dashboard.__file__).parent /
               'local_settings.d' / '_90_memagg.py')
    (directory / 'memagg_horizon_settings.py').write_text(_SETTINGS.format(
        enabled=memagg_enabled.__path__[0], snippet=str(snippet)))
    port = service_procs.free_port()
    url = 'http://127.0.0.1:%d' % port
    proc = service_procs.Process(
        'python', ['-m', 'django', 'runserver', '--noreload', '--insecure',
                   '127.0.0.1:%d' % port],
        directory / 'horizon.log',
        env={'DJANGO_SETTINGS_MODULE': 'memagg_horizon_settings',
             'PYTHONPATH': str(directory), 'PYTHONWARNINGS': 'ignore'})

    def login_page_answers():
        if not proc.alive():
            raise RuntimeError('Horizon exited:\n%s' % proc.log()[-4000:])
        return service_procs.answers(url + '/auth/login/')

    try:
        polling.wait_for(login_page_answers, START_TIMEOUT,
                         interval=0.5, message='Horizon answering on ' + url)
        yield url
    finally:
        proc.stop()


class Browser:
    """The module's chromium, and who is logged into Horizon in it."""

    def __init__(self, url, screenshots):
        from selenium import webdriver
        from selenium.webdriver.chrome import service

        self.url = url
        self.screenshots = screenshots
        self.user_data = tempfile.mkdtemp(prefix='memagg-chromium-')
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for flag in CHROMIUM_FLAGS + ('--user-data-dir=' + self.user_data,):
            options.add_argument(flag)
        self.driver = webdriver.Chrome(
            options=options,
            service=service.Service(executable_path=CHROMEDRIVER))
        self.driver.set_page_load_timeout(PAGE_TIMEOUT)
        self.account = None

    def quit(self):
        self.driver.quit()
        shutil.rmtree(self.user_data, ignore_errors=True)

    def login(self, account, path):
        """Open ``path`` as ``account`` (a keystone Account), logging in
        through Horizon's form first unless already."""
        if self.account is account:
            self.open(path)
            return
        self.driver.delete_all_cookies()
        # Straight to the page: Horizon's home page would call Nova and
        # Neutron, which this cloud does not have.
        self.open('/auth/login/?next=' + path)
        self.find('#id_username').send_keys(account.username)
        self.find('#id_password').send_keys(account.password)
        self.find('#loginBtn').click()
        polling.wait_for(
            lambda: self.driver.current_url == self.url + path,
            PAGE_TIMEOUT, message='logged in as ' + account.username)
        self.account = account

    def open(self, path):
        self.driver.get(self.url + path)

    def find(self, css):
        return self.driver.find_element('css selector', css)

    def find_all(self, css):
        return self.driver.find_elements('css selector', css)

    def attr(self, css, name):
        return self.find(css).get_attribute(name)

    def screenshot(self, name, colours):
        """Save the window as ``name``.png and check it shows a page with
        the charts' ``colours`` drawn (hex, from memagg.dashboard.charts);
        its path."""
        path = self.screenshots / (name + '.png')
        assert self.driver.save_screenshot(str(path))
        check_screenshot(path, colours)
        return path


def check_screenshot(path, colours):
    """A PNG of the browser's window that shows a page, not a blank one,
    with every one of ``colours`` painted somewhere."""
    from PIL import Image

    image = Image.open(io.BytesIO(path.read_bytes()))
    assert image.format == 'PNG'
    assert image.size[0] >= 1000 and image.size[1] >= 700, image.size
    rgb = image.convert('RGB')
    counts = rgb.getcolors(maxcolors=image.size[0] * image.size[1])
    assert len(counts) > 20, 'a near-uniform screenshot: %s' % path
    assert max(counts)[0] < 0.97 * image.size[0] * image.size[1], (
        'a mostly blank screenshot: %s' % path)
    painted = {colour for _, colour in counts}
    for colour in colours:
        wanted = tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))
        assert wanted in painted, '%s not drawn in %s' % (colour, path)


@pytest.fixture(scope='module')
def browser(horizon, tmp_path_factory):
    browser = Browser(horizon, tmp_path_factory.mktemp('screenshots'))
    try:
        yield browser
    finally:
        browser.quit()


@pytest.fixture(scope='module')
def admin_api(deployment):
    """memagg's client as the cloud's admin: what the pages must show."""
    return memagg_client.Client(
        deployment.keystone.session(deployment.keystone.admin),
        interface='public', region_name=keystone_fixture.REGION)


def test_admin_memory_host_bars_carry_the_api_numbers(browser, deployment,
                                                      admin_api):
    browser.login(deployment.keystone.admin, '/admin/memory/')
    usages = {u['host']: u
              for u in admin_api.host_usages.list()['host_usages']}
    pool = {h['host']: h for h in admin_api.reservoir.get()['hosts']}
    for host in deployment.hosts:
        chart = '.memagg-host[data-host="%s"] ' % host
        for series in ('memory_mb', 'booked_mb', 'wss_maxavg_mb'):
            assert int(browser.attr(chart + 'g[data-series="%s"]' % series,
                                    'data-mb')) == usages[host][series]
        for series in ('lent_mb', 'borrowed_mb', 'free_reservoir_mb'):
            assert int(browser.attr(chart + 'g[data-series="%s"]' % series,
                                    'data-mb')) == pool[host][series]
    # The seeded grant: the second host lends to the first.
    assert pool[deployment.hosts[1]]['lent_mb'] > 0
    booked = sum(u['booked_mb'] for u in usages.values())
    wss = sum(u['wss_maxavg_mb'] for u in usages.values())
    assert int(browser.attr('#memagg-freed', 'data-mb')) == booked - wss
    assert browser.find('.memagg-bars').size['width'] > 300
    # The seeded 256 MiB lent and borrowed are a pixel wide, blended into
    # the track: the wide bars' colours are the ones to look for.
    browser.screenshot('admin-memory', [
        colour for key, _, colour in charts.HOST_BARS
        if key not in ('lent_mb', 'borrowed_mb')])


def test_instance_chart_carries_the_wss_history(browser, deployment,
                                                admin_api):
    uuid = deployment.instances['admin'][0]
    browser.login(deployment.keystone.admin,
                  '/admin/memory/instances/%s/' % uuid)
    samples = list(admin_api.instances.wss(uuid).all_items())
    assert samples
    for key in ('wss_mb', 'target_mb'):
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
    browser.screenshot('admin-instance',
                       [c for _, _, c in charts.HISTORY_SERIES])


def test_reservoir_lists_the_grant_with_its_donors(
        browser, deployment, admin_api):
    browser.login(deployment.keystone.admin, '/admin/memory/reservoir/')
    [uuid] = deployment.grants
    grant = admin_api.grants.get(uuid)
    row = '.memagg-grants tr[data-uuid="%s"]' % uuid
    assert browser.find(row + ' .memagg-donors').text == ', '.join(
        sorted({slab['donor_host'] for slab in grant['slabs']}))
    assert browser.attr(row, 'data-granted-mb') == str(grant['granted_mb'])
    total = admin_api.reservoir.get()
    assert browser.attr('#memagg-reservoir-total', 'data-free-mb') == str(
        total['free_reservoir_mb'])
    browser.screenshot('admin-reservoir', [])


def test_audit_shows_ordered_actions_and_execute_to_an_admin(
        browser, deployment, admin_api):
    audit = admin_api.audits.create(auto_execute=False)
    audit = polling.wait_for(
        lambda: (lambda a: a if a['state'] not in ('pending', 'planning')
                 else None)(admin_api.audits.get(audit['uuid'])),
        AUDIT_TIMEOUT, interval=0.2, message='the audit planned')
    browser.login(deployment.keystone.admin, '/admin/memory/audits/')
    assert browser.find_all('.memagg-audits tr[data-uuid="%s"]'
                            % audit['uuid'])
    browser.open('/admin/memory/audits/%s/' % audit['uuid'])
    assert browser.find('#memagg-audit-state').text == audit['state']
    shown = [int(row.get_attribute('data-sequence'))
             for row in browser.find_all('.memagg-actions tr[data-sequence]')]
    assert shown == sorted(a['sequence'] for a in audit['actions'])
    # The admin may execute; the button is there only while the plan
    # waits for it.
    assert (len(browser.find_all('#memagg-execute')) ==
            (audit['state'] == 'recommended'))
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
    browser.open('/project/memory/instances/%s/' % uuid)
    wss = [int(dot.get_attribute('data-mb')) for dot in browser.find_all(
        '#memagg-history g[data-series="wss_mb"] circle')]
    assert wss == [s['wss_mb']
                   for s in admin_api.instances.wss(uuid).all_items()]
    browser.screenshot('project-instance',
                       [c for _, _, c in charts.HISTORY_SERIES])
    # Admin → Memory is not for a member: Horizon's "not authorized" page.
    browser.open('/admin/memory/')
    assert 'not authorized' in browser.find('body').text
    assert not browser.find_all('.memagg-host')
    # Admin → Memory is not for a member: Horizon's "not authorized" page.
    browser.open('/admin/memory/')
    assert 'not authorized' in browser.find('body').text
    assert not browser.find_all('.memagg-host')
