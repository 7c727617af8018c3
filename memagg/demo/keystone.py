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

"""A real Keystone of its own, on SQLite, for ``memagg-aio --demo`` and the
tests: ``start()`` prepares one in a directory (database, fernet and
credential keys, ``keystone-manage bootstrap``), serves it as a process on
a loopback port it picks, and creates the accounts memagg needs through
Keystone's REST API:

* ``admin``: the bootstrap admin of project ``admin``;
* ``service``: user ``memagg`` with role ``service`` in project
  ``service``, the account keystonemiddleware validates tokens with;
* ``member``: user ``tenant-member`` with role ``member`` in project
  ``memagg-tenant``;
* ``reader``: user ``tenant-reader`` with role ``reader`` in the same
  project.

Keystone's pins would fight memagg's, so tools/setup.sh installs it into
its own virtualenv, ``.venv-keystone`` beside the source tree
(MEMAGG_KEYSTONE_VENV overrides).
"""
import dataclasses
import grp
import os
import pathlib
import pwd
import secrets
import subprocess
import time

from keystoneauth1.identity import v3 as ks_identity
from keystoneauth1 import loading as ks_loading
from keystoneauth1 import session as ks_session
import requests

from memagg.demo import server as server_mod

SOURCE_ROOT = pathlib.Path(__file__).resolve().parents[2]
REGION = 'RegionOne'
START_TIMEOUT = 60


def venv():
    """The virtualenv Keystone is installed in."""
    return pathlib.Path(os.environ.get('MEMAGG_KEYSTONE_VENV',
                                       SOURCE_ROOT / '.venv-keystone'))


def missing():
    """What is missing, and how to get it, when Keystone is not installed;
    None when it is."""
    if (venv() / 'bin' / 'keystone-manage').exists():
        return None
    return ('a Keystone in %s: run tools/setup.sh (it installs one there), '
            'or set MEMAGG_KEYSTONE_VENV' % venv())


class Unavailable(Exception):
    """No Keystone can run here; the message says what is missing and how
    to get it."""


# Runs inside Keystone's virtualenv: its Flask app behind a threaded
# wsgiref server (keystonemiddleware and a client may call it at once), on
# a port the kernel picks, written to the file named first once bound.
_SERVE = """
import os, socketserver, sys
from wsgiref import simple_server
from keystone.server import wsgi

port_file = sys.argv.pop(1)  # keystone parses the rest of sys.argv


class Server(socketserver.ThreadingMixIn, simple_server.WSGIServer):
    daemon_threads = True

app = wsgi.initialize_public_application()
httpd = simple_server.make_server('127.0.0.1', 0, app, server_class=Server)
with open(port_file + '.new', 'w') as f:
    f.write(str(httpd.server_port))
os.rename(port_file + '.new', port_file)
httpd.serve_forever()
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
# bcrypt's fewest rounds: the tests create users and tokens by the dozen,
# and the default cost makes each password check take a quarter second.
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


def new_accounts():
    """The four accounts, each with a password of its own made now."""
    def secret():
        return secrets.token_urlsafe(12)
    return {'admin': Account('admin', secret(), 'admin'),
            'service': Account('memagg', secret(), 'service'),
            'member': Account('tenant-member', secret(), 'memagg-tenant'),
            'reader': Account('tenant-reader', secret(), 'memagg-tenant')}


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
        Admin(self).register_endpoint(service_type, name, url)

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

    def os_env(self, account):
        """The OS_* variables a client (the ``openstack`` CLI, any
        keystoneauth consumer) logs in as ``account`` with."""
        return {
            'OS_AUTH_URL': self.auth_url,
            'OS_AUTH_TYPE': 'password',
            'OS_USERNAME': account.username,
            'OS_PASSWORD': account.password,
            'OS_PROJECT_NAME': account.project_name,
            'OS_USER_DOMAIN_ID': 'default',
            'OS_PROJECT_DOMAIN_ID': 'default',
            'OS_REGION_NAME': REGION,
            'OS_IDENTITY_API_VERSION': '3',
            'OS_INTERFACE': 'public',
        }


class Admin:
    """Keystone's v3 REST API with the admin's token."""

    def __init__(self, keystone):
        self.url = keystone.auth_url
        self.headers = {'X-Auth-Token': keystone.token(keystone.admin)}

    def call(self, method, path, **kwargs):
        """``method`` on ``path`` (under /v3): the JSON answer, or None."""
        resp = requests.request(method, self.url + path,
                                headers=self.headers, timeout=30, **kwargs)
        if resp.status_code >= 400:
            raise RuntimeError('Keystone %s %s: %d %s'
                               % (method, path, resp.status_code, resp.text))
        return resp.json() if resp.content else None

    def find(self, kind, name):
        """The id of the ``kind`` (project, user, role…) named ``name``."""
        return self.call('GET', '/%ss' % kind,
                         params={'name': name})['%ss' % kind][0]['id']

    def create_project(self, name):
        body = {'project': {'name': name, 'domain_id': 'default'}}
        return self.call('POST', '/projects', json=body)['project']['id']

    def create_user(self, account):
        body = {'user': {'name': account.username,
                         'password': account.password,
                         'domain_id': 'default',
                         'default_project_id': account.project_id}}
        return self.call('POST', '/users', json=body)['user']['id']

    def register_endpoint(self, service_type, name, url):
        """A catalog service with ``url`` on its three interfaces."""
        body = {'service': {'type': service_type, 'name': name}}
        service = self.call('POST', '/services', json=body)['service']['id']
        for interface in ('public', 'internal', 'admin'):
            self.call('POST', '/endpoints', json={'endpoint': {
                'service_id': service, 'interface': interface, 'url': url,
                'region_id': REGION}})

    def grant(self, account, role):
        self.call('PUT', '/projects/%s/users/%s/roles/%s'
                  % (account.project_id, account.user_id,
                     self.find('role', role)))


def _manage(conf, *args):
    cmd = [str(venv() / 'bin' / 'keystone-manage'), '--config-file',
           str(conf)]
    result = subprocess.run(cmd + list(args), capture_output=True, text=True,
                            timeout=120)
    if result.returncode:
        raise RuntimeError('keystone-manage %s failed (%d):\n%s'
                           % (args[0], result.returncode, result.stderr))


def _serve(directory, conf):
    """The Keystone process and the port it bound."""
    port_file = directory / 'port'
    env = dict(os.environ, OS_KEYSTONE_CONFIG_FILES=str(conf),
               PYTHONWARNINGS='ignore')
    with open(directory / 'server.log', 'wb') as log:
        proc = subprocess.Popen(
            [str(venv() / 'bin' / 'python'), '-c', _SERVE, str(port_file)],
            env=env, stdin=subprocess.DEVNULL, stdout=log,
            stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + START_TIMEOUT
    while not port_file.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            server = server_mod.Server(proc, directory / 'server.log')
            server.stop()
            raise RuntimeError('Keystone did not start (%s):\n%s' % (
                'exit status %s' % proc.returncode
                if proc.returncode is not None else
                'no port within %d s' % START_TIMEOUT, server.log()))
        time.sleep(0.1)
    return proc, int(port_file.read_text())


def _populate(keystone):
    """Create the service, member and reader accounts through the API."""
    api = Admin(keystone)
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


def start(directory, accounts=None):
    """Prepare and serve a new Keystone in ``directory`` (a new, empty
    pathlib.Path); once the accounts (``accounts``, as new_accounts()
    makes them by default) exist, return its memagg.demo.server.Server,
    whose ``keystone`` is the Keystone with its accounts. Unavailable
    without its virtualenv."""
    if missing():
        raise Unavailable('this needs ' + missing())
    accounts = accounts or new_accounts()
    conf = directory / 'keystone.conf'
    conf.write_text(_CONF.format(dir=directory))
    # The key repositories belong to whoever runs Keystone.
    owner = ['--keystone-user', pwd.getpwuid(os.geteuid()).pw_name,
             '--keystone-group', grp.getgrgid(os.getegid()).gr_name]
    _manage(conf, 'db_sync')
    _manage(conf, 'fernet_setup', *owner)
    _manage(conf, 'credential_setup', *owner)
    proc, port = _serve(directory, conf)
    url = 'http://127.0.0.1:%d' % port
    server = server_mod.Server(proc, directory / 'server.log', url)
    server.keystone = Keystone(url=url, **accounts)
    try:
        admin = accounts['admin']
        _manage(conf, 'bootstrap',
                '--bootstrap-username', admin.username,
                # One argument: a password may begin with '-'.
                '--bootstrap-password=' + admin.password,
                '--bootstrap-project-name', admin.project_name,
                '--bootstrap-admin-url', url + '/v3',
                '--bootstrap-public-url', url + '/v3',
                '--bootstrap-internal-url', url + '/v3',
                '--bootstrap-region-id', REGION)
        _populate(server.keystone)
    except BaseException:
        server.stop()
        raise
    return server


def check_api(conf, keystone):
    """Have memagg-api built on ``conf`` check tokens at ``keystone``
    (keystonemiddleware, with the service account)."""
    group = 'keystone_authtoken'
    options = keystone.authtoken_options()
    # The password plug-in's options exist once keystonemiddleware loads
    # it, after the app is built: register them now to set them.
    conf.register_opts(ks_loading.get_auth_plugin_conf_options('password'),
                       group=group)
    for name, value in options.items():
        conf.set_override(name, value, group=group)
    conf.set_override('auth_strategy', 'keystone', group='api')


def openrc(keystone, account):
    """A shell file exporting the OS_* variables of ``account``."""
    return ''.join("export %s='%s'\n" % item for item in sorted(
        keystone.os_env(account).items()))
