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

"""Horizon with memagg's panels, for ``memagg-aio --demo`` and the browser
tests: Horizon served by Django's runserver from this interpreter, with
memagg's "enabled" files and policy snippet loaded as a deployment loads
them (memagg.dashboard), logging in through a Keystone; its settings, log
and sessions in a directory of its own."""
import importlib.util
import os
import pathlib
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import memagg
from memagg.demo import server as server_mod

START_TIMEOUT = 120

#: memagg's Horizon plug-in (memagg.dashboard), whose files Horizon loads
#: as an operator installs them: read here, not imported (it is Horizon's
#: code, a layer above the demo's).
DASHBOARD = pathlib.Path(memagg.__file__).parent / 'dashboard'

# Horizon's settings import local.local_settings from sys.path: the
# operator's file, here pointing at the Keystone and keeping everything
# Horizon writes in the directory.
_LOCAL_SETTINGS = """\
DEBUG = False
ALLOWED_HOSTS = ['127.0.0.1', 'localhost']
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


def missing():
    """What is missing, and how to get it, when Horizon is not installed
    beside memagg; None when it is."""
    if importlib.util.find_spec('openstack_dashboard') is not None:
        return None
    return ("Horizon beside memagg: run tools/setup.sh, or pip install "
            "'memagg[dashboard]'")


def _free_port():
    # runserver takes a port number, not a bound socket: one free now.
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def _answers(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def start(directory, auth_url):
    """Serve Horizon with memagg's panels on 127.0.0.1, its files in
    ``directory`` (a new, empty pathlib.Path), logging in through the
    Keystone at ``auth_url``; return its Server once its login page
    answers (a memagg.demo.server.Server). RuntimeError, with its log,
    when it does not."""
    (directory / 'local').mkdir()
    (directory / 'local' / '__init__.py').write_text('')
    (directory / 'local' / 'local_settings.py').write_text(
        _LOCAL_SETTINGS.format(secret=os.urandom(16).hex(),
                               dir=str(directory), auth_url=auth_url))
    (directory / 'memagg_horizon_settings.py').write_text(_SETTINGS.format(
        enabled=str(DASHBOARD / 'enabled'),
        snippet=str(DASHBOARD / 'local_settings.d' / '_90_memagg.py')))
    port = _free_port()
    url = 'http://127.0.0.1:%d' % port
    env = dict(os.environ, DJANGO_SETTINGS_MODULE='memagg_horizon_settings',
               PYTHONPATH=str(directory), PYTHONWARNINGS='ignore')
    with open(directory / 'horizon.log', 'wb') as log:
        proc = subprocess.Popen(
            [sys.executable, '-m', 'django', 'runserver', '--noreload',
             '--insecure', '127.0.0.1:%d' % port],
            env=env, stdin=subprocess.DEVNULL, stdout=log,
            stderr=subprocess.STDOUT, start_new_session=True)
    server = server_mod.Server(proc, directory / 'horizon.log', url)
    deadline = time.monotonic() + START_TIMEOUT
    while not _answers(url + '/auth/login/'):
        if proc.poll() is not None or time.monotonic() > deadline:
            server.stop()
            raise RuntimeError('Horizon did not answer on %s (%s):\n%s' % (
                url, 'exit status %s' % proc.returncode
                if proc.returncode is not None else
                'within %d s' % START_TIMEOUT, server.log()))
        time.sleep(0.5)
    return server
