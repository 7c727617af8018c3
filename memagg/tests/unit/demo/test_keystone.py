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

"""The demo's Keystone, without one: refused in a line saying how to get
it, memagg-api's options set to check tokens there, the openrc file. (A
real one: functional/keystone.py serves it to the tests, and
functional/test_aio.py runs the demo behind it.)"""
import re
import subprocess

from oslo_config import cfg
import pytest

from memagg.conf import api as api_conf
from memagg.demo import keystone


@pytest.fixture
def no_keystone(tmp_path, monkeypatch):
    monkeypatch.setenv('MEMAGG_KEYSTONE_VENV', str(tmp_path / 'venv'))
    return tmp_path / 'venv'


def test_missing_says_where_and_how(no_keystone):
    assert keystone.missing() == (
        'a Keystone in %s: run tools/setup.sh (it installs one there), or '
        'set MEMAGG_KEYSTONE_VENV' % no_keystone)


def test_an_installed_one_is_not_missing(no_keystone):
    (no_keystone / 'bin').mkdir(parents=True)
    (no_keystone / 'bin' / 'keystone-manage').touch()
    assert keystone.missing() is None


def test_start_without_it_runs_nothing(no_keystone, tmp_path, monkeypatch):
    def no_process(*args, **kwargs):
        raise AssertionError('ran %s' % (args,))
    monkeypatch.setattr(subprocess, 'run', no_process)
    monkeypatch.setattr(subprocess, 'Popen', no_process)
    directory = tmp_path / 'ks'
    directory.mkdir()
    with pytest.raises(keystone.Unavailable, match='run tools/setup.sh'):
        keystone.start(directory)
    assert list(directory.iterdir()) == []


def _keystone():
    accounts = keystone.new_accounts()
    return keystone.Keystone(url='http://127.0.0.1:5000', **accounts)


def test_each_account_gets_a_password_of_its_own():
    first, second = keystone.new_accounts(), keystone.new_accounts()
    passwords = [a.password for a in first.values()] + [
        a.password for a in second.values()]
    assert len(set(passwords)) == 8
    assert all(len(p) >= 16 for p in passwords)


def test_the_api_checks_tokens_with_the_service_account():
    # A conf of its own: the password plug-in's options registered here
    # (auth_url required) would stay on the tests' global one.
    conf = cfg.ConfigOpts()
    api_conf.register_opts(conf)
    conf([])
    ks = _keystone()
    keystone.check_api(conf, ks)

    assert conf.api.auth_strategy == 'keystone'
    group = conf.keystone_authtoken
    assert group.auth_type == 'password'
    assert (group.auth_url, group.username, group.password) == (
        'http://127.0.0.1:5000/v3', 'memagg', ks.service.password)
    assert group.region_name == keystone.REGION


def test_openrc_exports_the_accounts_login():
    ks = _keystone()
    text = keystone.openrc(ks, ks.member)
    exported = dict(re.findall(r"^export (OS_\w+)='([^']*)'$", text, re.M))
    assert exported == ks.os_env(ks.member)
    assert exported['OS_USERNAME'] == 'tenant-member'
    assert exported['OS_PROJECT_NAME'] == 'memagg-tenant'
