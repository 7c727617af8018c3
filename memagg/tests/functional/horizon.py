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
Horizon as ``memagg-aio --demo`` serves it (memagg.demo.horizon), logging
in through a real Keystone; Debian's headless chromium driven through
Selenium; and the check that a screenshot shows a page.

Without chromium, chromedriver or Selenium the tests skip, except under CI
(CI=true), where a missing browser is a broken setup and fails them.
"""
import contextlib
import io
import os
import shutil
import tempfile

import pytest

from memagg.demo import horizon as demo_horizon
from memagg.tests.functional import keystone as keystone_fixture
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
PAGE_TIMEOUT = 60


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
    """Horizon with memagg's panels as the demo serves it
    (memagg.demo.horizon), its files in ``directory``, logging in through
    the Keystone at ``auth_url``; yield its URL, stop it afterwards."""
    require_browser()
    server = demo_horizon.start(directory, auth_url)
    try:
        yield server.url
    finally:
        server.stop()


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
        """Load ``path`` and wait for the requests its scripts make."""
        self.driver.get(self.url + path)
        self.settle()

    def settle(self):
        """Wait until the page's scripts have no request in flight.

        Horizon fetches its header (/header/) once a page has loaded, and
        every request of a logged-in user saves the whole session (its
        middleware refreshes the expiry): a form posted while that fetch
        is in flight can have what it stored in the session (a server
        filter's text) overwritten by the fetch's older copy, and the
        page it redirects to forgets it.
        """
        polling.wait_for(
            lambda: self.driver.execute_script(
                'return !window.jQuery || (jQuery.active === 0 && '
                '!(window.horizon && horizon.ajax && '
                'horizon.ajax._queue.length))'),
            PAGE_TIMEOUT, message="the page's requests to end")

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
