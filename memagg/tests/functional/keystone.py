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

"""The tests' real Keystone: the session-scoped ``keystone`` fixture is
the one ``memagg-aio --demo`` runs (memagg.demo.keystone), prepared once
per test session in a temporary directory, with its admin, service,
member and reader accounts.

Without Keystone's virtualenv the fixture skips, except under CI
(CI=true), where a missing Keystone is a broken setup and fails the test.
"""
import contextlib
import os
import pathlib

import pytest

from memagg.demo import keystone as demo_keystone

REPO_ROOT = pathlib.Path(__file__).resolve().parents[3]


def in_ci():
    """Whether this is a CI run (CI=true), where a missing real service
    is a broken setup, not a reason to skip."""
    return os.environ.get('CI', '').lower() in ('true', '1', 'yes')


@contextlib.contextmanager
def running(directory):
    """A real Keystone on 127.0.0.1 with admin, service, member and reader
    accounts, its database and log in ``directory``; stopped after."""
    # Every password begins with '-', the case a command line can mistake
    # for an option (keystone-manage bootstrap did, once in 64 starts).
    accounts = demo_keystone.new_accounts()
    for account in accounts.values():
        account.password = '-' + account.password
    try:
        server = demo_keystone.start(directory, accounts)
    except demo_keystone.Unavailable as exc:
        if in_ci():
            pytest.fail('%s (CI must test against a real Keystone)' % exc)
        pytest.skip(str(exc))
    try:
        yield server.keystone
    finally:
        server.stop()


@pytest.fixture(scope='session')
def keystone(tmp_path_factory):
    """The session's Keystone (running()), stopped at its end."""
    with running(tmp_path_factory.mktemp('keystone')) as ks:
        yield ks
