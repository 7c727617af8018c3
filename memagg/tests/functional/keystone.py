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

"""A real Keystone for functional tests, run from its own virtualenv.

Keystone's pins would fight memagg's, so tools/setup.sh installs it into
``.venv-keystone`` (override with MEMAGG_KEYSTONE_VENV). The session-scoped
``keystone`` fixture prepares it once per test session (SQLite database,
fernet and credential keys, ``keystone-manage bootstrap``) in a temporary
directory, serves it as a separate process on a free loopback port, and
creates through its REST API what memagg's tests need:

* ``admin``: the bootstrap admin of project ``admin``;
* ``service``: user ``memagg`` with role ``service`` in project ``service``,
  the account keystonemiddleware validates tokens with;
* ``member``: user ``tenant-member`` with role ``member`` in project
  ``memagg-tenant``;
* ``reader``: user ``tenant-reader`` with role ``reader`` in the same
  project.

``register_endpoint`` puts a service of the tests' in its catalog.

Without ``.venv-keystone`` the fixture skips, except under CI (CI=true),
where a missing Keystone is a broken setup and fails the test.
"""
import contextlib
import dataclasses
import grp
import os
import pathlib
import pwd
import subprocess

from keystoneauth1.identity import v3 as ks_identity
from keystoneauth1 import session as ks_session
import pytest
import requests

from memagg.tests.functional import service_procs
from memagg.tests import polling

REPO_ROOT = pathlib.Path(__file__).resolve().parents[3]
VENV = pathlib.Path(os.environ.get('MEMAGG_KEYSTONE_VENV',
                                   REPO_ROOT / '.venv-keystone'))
REGION = 'RegionOne'
START_TIMEOUT = 60

# Runs inside .venv-keystone: keystone's Flask app behind a threaded wsgiref
# server, because keystonemiddleware and the test may call it at once.
_SERVE = """
import socketserver, sys
from wsgiref import simple_server
from keystone.server import wsgi

port = int(sys.argv.pop(1))  # keystone parses the rest of sys.argv


class Server(socketserver.ThreadingMixIn, simple_server.WSGIServer):
    daemon_threads = True

app = wsgi.initialize_public_application()
simple_server.make_server('127.0.0.1', port, app,
                          server_class=Server).serve_forever()
"""

_CONF = """\
[DEFAULT]
log_file = {dir}/keystone.log
[database]
connection = sqlite:///{dir}/keystone.sqlite
[token]
provider = fernet
[fernet_tokens]
key_repository = {dir}/fernet-keys
[fernet_receipts]
key_repository = {dir}/fernet-receipts
[credential]
key_repository = {dir}/credential-keys
[identity]
# bcrypt's fewest rounds: tests create users and tokens by the dozen, and
# the default cost makes each password check take a quarter of a second.
password_hash_algorithm = bcrypt
password_hash_rounds = 4
"""


@dataclasses.dataclass
class Account:
    """A Keystone user and the project its tokens are scoped to."""

    username: str
    password: str
    project_name: str
    user_id: str = ''
    project_id: str = ''


@dataclasses.dataclass
class Keystone:
    """A running Keystone and the accounts prepared in it."""

    url: str
    admin: Account
    service: Account
    member: Account
    reader: Account

    @property
    def auth_url(self):
        return self.url + '/v3'

    def session(self, account):
        """A keystoneauth1 session authenticated as ``account``."""
        auth = ks_identity.Password(
            auth_url=self.auth_url, username=account.username,
            password=account.password, project_name=account.project_name,
            user_domain_id='default', project_domain_id='default')
        return ks_session.Session(auth=auth)

    def token(self, account):
        """A new project-scoped token for ``account``."""
        return self.session(account).get_token()

    def register_endpoint(self, service_type, name, url):
        """Put ``url`` in the catalog as ``service_type``'s public,
        internal and admin endpoint in REGION."""
        _Admin(self).register_endpoint(service_type, name, url)

    def authtoken_options(self):
        """[keystone_authtoken] options of a service checking tokens here."""
        return {
            'www_authenticate_uri': self.auth_url,
            'auth_url': self.auth_url,
            'auth_type': 'password',
            'username': self.service.username,
            'password': self.service.password,
            'project_name': self.service.project_name,
            'user_domain_id': 'default',
            'project_domain_id': 'default',
            'region_name': REGION,
        }


def in_ci():
    """Whether this is a CI run (CI=true), where a missing real service
    is a broken setup, not a reason to skip."""
    return os.environ.get('CI', '').lower() in ('true', '1', 'yes')


def _require_venv():
    if (VENV / 'bin' / 'keystone-manage').exists():
        return
    message = ('no Keystone in %s: run ./tools/setup.sh to install it'
               % VENV)
    if in_ci():
        pytest.fail(message + ' (CI must test against a real Keystone)')
    pytest.skip(message)


def _manage(conf, *args):
    cmd = [str(VENV / 'bin' / 'keystone-manage'), '--config-file', str(conf)]
    result = subprocess.run(cmd + list(args), capture_output=True, text=True,
                            timeout=120)
    if result.returncode:
        raise RuntimeError('keystone-manage %s failed (%d):\n%s'
                           % (args[0], result.returncode, result.stderr))


def _prepare(directory, port, admin):
    """Write keystone.conf, create the DB and keys, bootstrap the admin."""
    conf = directory / 'keystone.conf'
    conf.write_text(_CONF.format(dir=directory))
    # The key repositories belong to whoever runs the tests.
    owner = ['--keystone-user', pwd.getpwuid(os.geteuid()).pw_name,
             '--keystone-group', grp.getgrgid(os.getegid()).gr_name]
    _manage(conf, 'db_sync')
    _manage(conf, 'fernet_setup', *owner)
    _manage(conf, 'credential_setup', *owner)
    endpoint = 'http://127.0.0.1:%d/v3' % port
    _manage(conf, 'bootstrap',
            '--bootstrap-username', admin.username,
            '--bootstrap-password', admin.password,
            '--bootstrap-project-name', admin.project_name,
            '--bootstrap-admin-url', endpoint,
            '--bootstrap-public-url', endpoint,
            '--bootstrap-internal-url', endpoint,
            '--bootstrap-region-id', REGION)
    return conf


def _serve(conf, port, log):
    env = dict(os.environ, OS_KEYSTONE_CONFIG_FILES=str(conf),
               PYTHONWARNINGS='ignore')
    return subprocess.Popen(
        [str(VENV / 'bin' / 'python'), '-c', _SERVE, str(port)],
        env=env, stdin=subprocess.DEVNULL, stdout=log,
        stderr=subprocess.STDOUT, start_new_session=True)


def _answering(url, proc, log_path):
    if proc.poll() is not None:
        raise RuntimeError('Keystone exited with %s:\n%s'
                           % (proc.returncode, log_path.read_text()[-4000:]))
    try:
        return requests.get(url + '/v3', timeout=2).status_code == 200
    except requests.ConnectionError:
        return False


class _Admin:
    """Calls Keystone's v3 REST API with the admin's token."""

    def __init__(self, keystone):
        self.url = keystone.auth_url
        self.headers = {'X-Auth-Token': keystone.token(keystone.admin)}

    def _call(self, method, path, **kwargs):
        resp = requests.request(method, self.url + path,
                                headers=self.headers, timeout=30, **kwargs)
        if resp.status_code >= 400:
            raise RuntimeError('Keystone %s %s: %d %s'
                               % (method, path, resp.status_code, resp.text))
        return resp.json() if resp.content else None

    def find(self, kind, name):
        return self._call('GET', '/%ss' % kind,
                          params={'name': name})['%ss' % kind][0]['id']

    def create_project(self, name):
        body = {'project': {'name': name, 'domain_id': 'default'}}
        return self._call('POST', '/projects', json=body)['project']['id']

    def create_user(self, account):
        body = {'user': {'name': account.username,
                         'password': account.password,
                         'domain_id': 'default',
                         'default_project_id': account.project_id}}
        return self._call('POST', '/users', json=body)['user']['id']

    def register_endpoint(self, service_type, name, url):
        body = {'service': {'type': service_type, 'name': name}}
        service = self._call('POST', '/services', json=body)['service']['id']
        for interface in ('public', 'internal', 'admin'):
            self._call('POST', '/endpoints', json={'endpoint': {
                'service_id': service, 'interface': interface, 'url': url,
                'region_id': REGION}})

    def grant(self, account, role):
        self._call('PUT', '/projects/%s/users/%s/roles/%s'
                   % (account.project_id, account.user_id,
                      self.find('role', role)))


def _populate(keystone):
    """Create the service and member accounts through the REST API."""
    api = _Admin(keystone)
    admin = keystone.admin
    admin.project_id = api.find('project', admin.project_name)
    admin.user_id = api.find('user', admin.username)
    for account, role in ((keystone.service, 'service'),
                          (keystone.member, 'member'),
                          (keystone.reader, 'reader')):
        account.project_id = (
            keystone.member.project_id if account is keystone.reader
            else api.create_project(account.project_name))
        account.user_id = api.create_user(account)
        api.grant(account, role)


@contextlib.contextmanager
def running(directory):
    """A real Keystone on 127.0.0.1 with admin, service and member
    accounts, its database and log in ``directory``; stopped after."""
    _require_venv()
    port = service_procs.free_port()
    ks = Keystone(
        url='http://127.0.0.1:%d' % port,
        admin=Account('admin', 'admin-secret', 'admin'),
        service=Account('memagg', 'service-secret', 'service'),
        member=Account('tenant-member', 'member-secret', 'memagg-tenant'),
        reader=Account('tenant-reader', 'reader-secret', 'memagg-tenant'))
    conf = _prepare(directory, port, ks.admin)
    log_path = directory / 'server.log'
    with open(log_path, 'wb') as log:
        proc = _serve(conf, port, log)
    try:
        polling.wait_for(lambda: _answering(ks.url, proc, log_path),
                         START_TIMEOUT,
                         message='Keystone answering on %s' % ks.url)
        _populate(ks)
        yield ks
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope='session')
def keystone(tmp_path_factory):
    """A real Keystone on 127.0.0.1 with admin, service and member accounts.

    Prepared once per test session; the server is stopped at its end.
    """
    with running(tmp_path_factory.mktemp('keystone')) as ks:
        yield ks
