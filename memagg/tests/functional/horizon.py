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

"""Horizon with memagg's panels in a real browser, for the browser tests:
Horizon 27 served by Django's runserver from this venv, with memagg's
"enabled" files and policy snippet loaded as a deployment loads them,
logging in through a real Keystone; Debian's headless chromium driven
through Selenium; and the check that a screenshot shows a page.

Without chromium, chromedriver or Selenium the tests skip, except under CI
(CI=true), where a missing browser is a broken setup and fails them.
"""
import contextlib
import io
import os
import pathlib
import shutil
import tempfile

import pytest

from memagg import dashboard
from memagg.dashboard import enabled as memagg_enabled
from memagg.tests.functional import keystone as keystone_fixture
from memagg.tests.functional import service_procs
from memagg.tests import polling

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


def require_browser():
    """Skip (fail under CI) without chromium, chromedriver or Selenium."""
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


@contextlib.contextmanager
def serving(directory, auth_url):
    """Horizon, with memagg's panels, on a free port of 127.0.0.1 as a
    Django runserver keeping its settings, log and sessions in
    ``directory`` and logging in through the Keystone at ``auth_url``;
    yield its URL, stop it afterwards."""
    require_browser()
    (directory / 'local').mkdir()
    (directory / 'local' / '__init__.py').write_text('')
    (directory / 'local' / 'local_settings.py').write_text(
        _LOCAL_SETTINGS.format(secret=os.urandom(16).hex(),
                               dir=str(directory), auth_url=auth_url))
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
