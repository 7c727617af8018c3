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

"""A Nova compute API double served over real HTTP on loopback, held to
Nova's own contract.

A real Nova runs in memagg/tests/nova_functional (Nova's own functional
harness: API, conductor, scheduler, fake-driver computes, Placement), and
that is where plans are executed, refused and aborted by Nova. It runs in
one process with stubbed authentication, at Nova's newest microversion, so
this double stays for what it cannot reach (memagg/tests/functional/
test_nova_execution.py):

* openstacksdk finding Nova through the real Keystone's catalog, with
  tokens Keystone confirms;
* a Nova older than microversion 2.30, which memagg must refuse;
* a memagg executor killed with SIGKILL mid-migration and resumed by a
  new process, while Nova (here the double, in the test's process) keeps
  migrating;
* transient answers on demand (409 then success, a migration that fails
  back to the source, a call held until released) to drive retries.

The double answers the calls memagg's nova compute API driver makes
(through openstacksdk) and checks both directions against the JSON schemas
that the installed ``nova`` package attaches to its API controllers, each
for the microversion of the request, exactly as Nova picks them (Nova's
contract: memagg.tests.functional.nova_contract):

* GET /servers/{id}: the response against ``servers.show``
  (nova/api/openstack/compute/schemas/servers.py ``show_response*``);
* POST /servers/{id}/action os-migrateLive: the request body against
  ``migrate_server._migrate_live`` (schemas/migrate_server.py
  ``migrate_live*``);
* GET /servers/{id}/migrations: the response against
  ``server_migrations.index`` (schemas/server_migrations.py);
* GET /os-services and PUT /os-services/{id}: query, request and response
  against ``services.index`` and ``services.update`` (schemas/services.py).

A request Nova would reject is answered 400 as Nova would, and a response
real Nova could not send is answered 500; both are kept in ``violations``
for the test to assert there are none.

Only tokens that Keystone (the real one of the ``keystone`` fixture)
confirms are accepted. A live migration is simulated: once accepted the
server is ``MIGRATING`` (task state ``migrating``) for ``polls`` looks at
it, then ACTIVE on the destination; per server, the test can make calls
fail back to the source, be refused (409, 400) or be held until released.
DELETE /servers/{id}/migrations/{migration id} (2.24+, checked against
``server_migrations.delete``) aborts it: back on the source at the next
look.

With a ``migrator`` (memagg.tests.functional.nova_libvirt.LiveMigrator),
os-migrateLive moves the real guest whose domain UUID is the server's id,
between the hypervisor hosts the migrator knows by Nova host name, as
Nova's libvirt driver does (non-block: the double takes
block_migration 'auto' as shared storage). The server is MIGRATING while
libvirt's job runs; GET /servers/{id}/migrations shows the memory
statistics the driver's monitor saved (every [libvirt]
live_migration_monitor_interval); when the job ends the server is ACTIVE
on the destination, or on the source with the migration in ``error``
(``finished`` keeps each end); the abort call aborts the libvirt job, as
Nova's compute does on the API's cast. A source or destination the
migrator does not know is refused (400) as Nova's pre-checks would; of
the per-server behaviours, CONFLICT and NO_VALID_HOST still apply.
Nova's API shows the zeros its monitor saves (at the start, and
disk_*_bytes for a non-block migration) while its own response schema
asks for at least 1 (Nova only logs a warning by default); the double
shows null instead, which both allow.

The servers, services and migrations the double keeps, and the body in
which it shows a server, are memagg.tests.functional.nova_resources;
memagg.tests.functional.nova_catalog puts the double in the real
Keystone's catalog and configures memagg for it.
"""
import collections
import datetime
import http.server
import itertools
import json
import re
import threading
import urllib.parse
import uuid

import jsonschema
import libvirt
import requests

from memagg.tests.functional import nova_contract
from memagg.tests.functional import nova_libvirt
from memagg.tests.functional import nova_resources
from memagg.tests.unit.api import live


# What a live-migrate call of a server does, in turn (default: succeed):
SUCCEED = 'succeed'      # accepted; on the destination after `polls` looks
FAIL = 'fail'            # accepted; back on the source, ACTIVE
HOLD = 'hold'            # accepted; migrating until release() is called
CONFLICT = 'conflict'    # 409, as for a server locked or busy
NO_VALID_HOST = 'no valid host'   # 400, as Nova's pre-checks refuse
REAL = 'real'            # moved by the migrator
MIGRATION_TOTAL_BYTES = 1 << 30
# Where the double serves Nova's API; its root lists the versions.
COMPUTE_ROOT = '/compute'
COMPUTE_PATH = COMPUTE_ROOT + '/v2.1'


def _now():
    return datetime.datetime.now(datetime.timezone.utc).strftime(
        '%Y-%m-%dT%H:%M:%SZ')


_FAULT_KEYS = {400: 'badRequest', 404: 'itemNotFound',
               409: 'conflictingRequest'}


def _error(status, message):
    """(status, body) of a Nova error answer."""
    key = _FAULT_KEYS.get(status, 'computeFault')
    return status, {key: {'code': status, 'message': message}}


class NovaDouble:
    """Nova's compute API on loopback; see the module's docstring.

    Subclasses serve more (Glance, for one) by overriding public() and
    other().
    """

    def __init__(self, keystone, contract, project_id, user_id, polls=2,
                 migrator=None):
        self.keystone = keystone
        self.contract = contract
        self.max_version = contract.max_version
        self.project_id = project_id
        self.user_id = user_id
        self.polls = polls
        self.lock = threading.Lock()
        self.servers = {}
        self.services = {}
        self.behaviours = collections.defaultdict(list)
        self.migrations = {}
        self.requests = []
        self.served_versions = set()
        self.violations = []
        self.actions = []
        self.service_updates = []
        self.accepted = collections.Counter()
        self.looks = collections.Counter()
        self.refusals = collections.Counter()
        self.failing = False
        self.migrator = migrator
        self.finished = []
        self.aborts = []
        self.abort_errors = []
        self._ids = itertools.count(1)
        self._valid_tokens = set()
        self._admin_token = keystone.token(keystone.admin)
        self.server = http.server.ThreadingHTTPServer(
            ('127.0.0.1', 0), self._handler())
        self.url = 'http://127.0.0.1:%d' % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever,
                                       kwargs={'poll_interval': live.POLL_S},
                                       daemon=True)
        self.thread.start()

    @property
    def compute_url(self):
        return self.url + COMPUTE_PATH

    def close(self):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)

    def add_server(self, server_id, host, **fields):
        with self.lock:
            self.servers[server_id] = nova_resources.Server(
                server_id, host, **fields)

    def add_service(self, host, **fields):
        with self.lock:
            self.services[host] = nova_resources.Service(host, **fields)

    def release(self, server_id):
        """Let a held migration of ``server_id`` end (on its
        destination)."""
        with self.lock:
            self.migrations[server_id].held = False

    def token_valid(self, token):
        """Whether Keystone confirms ``token``, as keystonemiddleware
        would ask it."""
        if token in self._valid_tokens:
            return True
        resp = requests.get(
            self.keystone.auth_url + '/auth/tokens', timeout=30,
            headers={'X-Auth-Token': self._admin_token,
                     'X-Subject-Token': token or ''})
        if resp.status_code == 200:
            self._valid_tokens.add(token)
            return True
        return False

    def _handler(self):
        double = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _serve(self):
                length = int(self.headers.get('Content-Length') or 0)
                raw = self.rfile.read(length) if length else b''
                status, body, headers = double.answer(
                    self.command, self.path, self.headers, raw)
                data = b'' if body is None else json.dumps(body).encode()
                self.send_response(status)
                if body is not None:
                    self.send_header('Content-Type', 'application/json')
                self.send_header('Content-Length', str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = _serve

        return Handler

    def answer(self, method, target, headers, raw):
        """(status, JSON body or None, extra headers) of a request."""
        parsed = urllib.parse.urlsplit(target)
        path = parsed.path.rstrip('/')
        query = urllib.parse.parse_qs(parsed.query)
        self.requests.append((method, path))
        public = self.public(method, path)
        if public is not None:
            return public
        if not self.token_valid(headers.get('X-Auth-Token')):
            return 401, {'error': {'code': 401,
                                   'message': 'token not valid'}}, {}
        if self.failing:
            return (*_error(503, 'down'), {})
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            return (*_error(400, 'body is not JSON'), {})
        if path.startswith(COMPUTE_PATH + '/'):
            at = self._microversion(headers)
            answered = {'OpenStack-API-Version': 'compute '
                        + nova_contract.version_text(at),
                        'Vary': 'OpenStack-API-Version'}
            status, body = self._nova(method, path[len(COMPUTE_PATH):],
                                      query, body, at)
            return status, body, answered
        return self.other(method, path, query, headers, body)

    def public(self, method, path):
        """A response needing no token (version documents), or None."""
        if method == 'GET' and path in (COMPUTE_ROOT, COMPUTE_PATH):
            doc = {'id': 'v2.1', 'status': 'CURRENT',
                   'version': self.max_version, 'min_version': '2.1',
                   'updated': '2013-07-23T11:33:21Z',
                   'links': [{'rel': 'self',
                              'href': self.compute_url + '/'}],
                   'media-types': [{
                       'base': 'application/json',
                       'type': 'application/vnd.openstack.compute+json;'
                               'version=2.1'}]}
            if path == COMPUTE_ROOT:
                return 200, {'versions': [doc]}, {}
            return 200, {'version': doc}, {}
        return None

    def other(self, method, path, query, headers, body):
        """A response to a request outside Nova's API."""
        return (*_error(404, 'no route %s %s' % (method, path)), {})

    def _microversion(self, headers):
        requested = headers.get('OpenStack-API-Version', '')
        text = requested.replace('compute', '').strip() or '2.1'
        return min(nova_contract.version(text),
                   nova_contract.version(self.max_version))

    def _checked(self, endpoint, kind, at, document):
        """None, or the error answer when ``document`` breaks Nova's
        schema (recorded in ``violations``)."""
        try:
            self.contract.check(endpoint, kind, at, document)
        except (jsonschema.ValidationError, AssertionError) as exc:
            message = getattr(exc, 'message', str(exc))
            self.violations.append((endpoint, kind,
                                    nova_contract.version_text(at), message))
            if kind == nova_contract.RESPONSE_BODY:
                return _error(500, 'the double broke Nova\'s contract: %s'
                              % message)
            return _error(400, 'Invalid input for %s: %s'
                          % (endpoint, message))
        return None

    def _respond(self, endpoint, at, status, body):
        return self._checked(endpoint, nova_contract.RESPONSE_BODY, at,
                             body) or (status, body)

    def _nova(self, method, path, query, body, at):
        match = re.fullmatch(r'/servers/([0-9a-f-]+)(/action|/migrations)?'
                             r'(?:/(\d+))?', path)
        if match:
            server_id, tail, migration_id = match.groups()
            with self.lock:
                if server_id not in self.servers:
                    return _error(404, 'Instance %s could not be found.'
                                  % server_id)
                if method == 'GET' and tail is None:
                    return self._show(server_id, at)
                if method == 'POST' and tail == '/action':
                    return self._action(server_id, body, at)
                if (method == 'GET' and tail == '/migrations'
                        and migration_id is None):
                    return self._server_migrations(server_id, at)
                if (method == 'DELETE' and tail == '/migrations'
                        and migration_id is not None):
                    return self._abort(server_id, int(migration_id), at)
        if path == '/os-services' and method == 'GET':
            return self._services(query, at)
        match = re.fullmatch(r'/os-services/([0-9a-f-]+)', path)
        if match and method == 'PUT':
            return self._update_service(match.group(1), body, at)
        return _error(404, 'no route %s %s' % (method, path))

    def _show(self, server_id, at):
        self.looks[server_id] += 1
        move = self.migrations.get(server_id)
        if move is not None and move.live is None:
            move.looks_left -= 1
            move.copied = min(MIGRATION_TOTAL_BYTES,
                              move.copied + MIGRATION_TOTAL_BYTES // 4)
            if move.looks_left <= 0 and not move.held:
                self._end_migration(server_id)
        self.served_versions.add(at)
        return self._respond('servers.show', at, 200, {
            'server': nova_resources.server_body(
                self.servers[server_id], at, self.compute_url,
                self.project_id, self.user_id)})

    def _action(self, server_id, body, at):
        self.actions.append((server_id, nova_contract.version_text(at), body))
        if not isinstance(body, dict) or list(body) != ['os-migrateLive']:
            return _error(400, 'the double serves os-migrateLive only')
        error = self._checked('migrate_server.migrate_live',
                              nova_contract.REQUEST_BODY, at, body)
        if error:
            return error
        server = self.servers[server_id]
        dest = body['os-migrateLive']['host']
        if server.task_state is not None:
            self.refusals[server_id] += 1
            return _error(409, 'Cannot \'os-migrateLive\' instance %s '
                          'while it is in task_state %s'
                          % (server_id, server.task_state))
        queue = self.behaviours[server_id]
        outcome = queue.pop(0) if queue else SUCCEED
        if outcome == CONFLICT:
            self.refusals[server_id] += 1
            return _error(409, 'Instance %s is locked' % server_id)
        if outcome == NO_VALID_HOST or dest == server.host:
            self.refusals[server_id] += 1
            return _error(400, 'No valid host was found. Host %s cannot '
                          'take the instance.' % dest)
        if self.migrator is not None:
            return self._migrate_for_real(server, dest, at)
        self.accepted[server_id] += 1
        self.migrations[server_id] = nova_resources.Migration(
            id=next(self._ids), uuid=str(uuid.uuid4()), source=server.host,
            dest=dest, outcome=outcome, looks_left=self.polls,
            held=outcome == HOLD)
        server.status, server.task_state = 'MIGRATING', 'migrating'
        return self._respond('migrate_server.migrate_live', at, 202, None)

    def _migrate_for_real(self, server, dest, at):
        """os-migrateLive through the migrator (the double's lock held:
        the migration's callbacks wait for it)."""
        hosts = self.migrator.hosts
        if server.host not in hosts or dest not in hosts:
            self.refusals[server.id] += 1
            return _error(400, 'No valid host was found. Host %s cannot '
                          'take the instance.' % dest)
        move = nova_resources.Migration(
            id=next(self._ids), uuid=str(uuid.uuid4()), source=server.host,
            dest=dest, outcome=REAL, looks_left=0)
        try:
            move.live = self.migrator.start(
                server.id, server.host, dest, on_stats=self._live_stats,
                on_end=self._live_end)
        except libvirt.libvirtError as exc:
            # Nova's pre-check on the source (check_can_live_migrate_source)
            # fails this way at microversion 2.30.
            self.refusals[server.id] += 1
            return _error(400, 'Migration pre-check error: %s'
                          % exc.get_error_message())
        self.accepted[server.id] += 1
        self.migrations[server.id] = move
        server.status, server.task_state = 'MIGRATING', 'migrating'
        return self._respond('migrate_server.migrate_live', at, 202, None)

    def _live_stats(self, live, stats):
        with self.lock:
            move = self.migrations.get(live.uuid)
            if move is not None and move.live is live:
                move.saved = dict(stats)

    def _live_end(self, live):
        with self.lock:
            move = self.migrations.get(live.uuid)
            if move is None or move.live is not live:
                return
            del self.migrations[live.uuid]
            result = live.result
            self.finished.append(nova_resources.Finished(
                live.uuid, move.id, move.source, move.dest, result.status,
                result))
            server = self.servers[live.uuid]
            server.status, server.task_state = 'ACTIVE', None
            if result.status == nova_libvirt.COMPLETED:
                server.host = move.dest

    def _abort(self, server_id, migration_id, at):
        """DELETE /servers/{id}/migrations/{migration id}, as Nova's
        ServerMigrationsController.delete and compute API answer it."""
        if at < (2, 24):
            return _error(404, 'The resource could not be found.')
        server = self.servers[server_id]
        move = self.migrations.get(server_id)
        if server.task_state != 'migrating':
            return _error(409, 'Cannot \'abort live migration\' instance '
                          '%s while it is in task_state %s'
                          % (server_id, server.task_state))
        if move is None or move.id != migration_id:
            return _error(404, 'Migration %s for instance %s not found'
                          % (migration_id, server_id))
        self.aborts.append((server_id, migration_id,
                            nova_contract.version_text(at)))
        if move.live is not None:
            # Nova casts the abort to the source's compute.
            threading.Thread(target=self._abort_job, args=(move.live,),
                             daemon=True).start()
        else:
            move.outcome, move.held, move.looks_left = FAIL, False, 0
        return self._respond('server_migrations.delete', at, 202, None)

    def _abort_job(self, live):
        try:
            live.abort()
        except libvirt.libvirtError as exc:
            self.abort_errors.append((live.uuid, exc.get_error_message()))

    def _end_migration(self, server_id):
        move = self.migrations.pop(server_id)
        server = self.servers[server_id]
        server.status, server.task_state = 'ACTIVE', None
        if move.outcome != FAIL:
            server.host = move.dest

    def _server_migrations(self, server_id, at):
        move = self.migrations.get(server_id)
        items = []
        if move is not None:
            remaining = max(1, MIGRATION_TOTAL_BYTES - move.copied)
            simulated = {
                'memory_total_bytes': MIGRATION_TOTAL_BYTES,
                'memory_processed_bytes': move.copied or None,
                'memory_remaining_bytes': remaining,
                'disk_total_bytes': None, 'disk_processed_bytes': None,
                'disk_remaining_bytes': None}
            item = {
                'created_at': nova_resources.TIME, 'updated_at': _now(),
                'dest_compute': move.dest, 'dest_host': None,
                'dest_node': move.dest, 'id': move.id,
                'server_uuid': server_id, 'source_compute': move.source,
                'source_node': move.source, 'status': 'running'}
            if move.live is None:
                item.update(simulated)
            else:
                item.update({'%s_%s_bytes' % (kind, what):
                             move.saved.get('%s_%s' % (kind, what)) or None
                             for kind in ('memory', 'disk')
                             for what in ('total', 'processed',
                                          'remaining')})
            if at >= (2, 59):
                item['uuid'] = move.uuid
            if at >= (2, 80):
                item.update(project_id=self.project_id,
                            user_id=self.user_id)
            items.append(item)
        return self._respond('server_migrations.index', at, 200,
                             {'migrations': items})

    def _service_body(self, service, at):
        body = {'binary': 'nova-compute', 'host': service.host,
                'id': service.id, 'state': 'up', 'status': service.status,
                'disabled_reason': service.disabled_reason,
                'updated_at': _now(), 'zone': 'nova', 'forced_down': False}
        if at < (2, 53):
            body['id'] = 1 + sorted(self.services).index(service.host)
        return body

    def _services(self, query, at):
        error = self._checked('services.index', nova_contract.REQUEST_QUERY,
                              at, query)
        if error:
            return error
        with self.lock:
            found = [s for s in self.services.values()
                     if s.host in query.get('host', [s.host])
                     and 'nova-compute' in query.get('binary',
                                                     ['nova-compute'])]
            body = {'services': [self._service_body(s, at) for s in found]}
        return self._respond('services.index', at, 200, body)

    def _update_service(self, service_id, body, at):
        with self.lock:
            self.service_updates.append((
                service_id, nova_contract.version_text(at), body))
            error = self._checked('services.update',
                                  nova_contract.REQUEST_BODY, at, body)
            if error:
                return error
            found = [s for s in self.services.values() if s.id == service_id]
            if not found:
                return _error(404, 'Service %s could not be found.'
                              % service_id)
            service = found[0]
            if body.get('status') == 'enabled' and 'disabled_reason' in body:
                return _error(400, 'Specifying \'disabled_reason\' with '
                              'status \'enabled\' is invalid.')
            if 'status' in body:
                service.status = body['status']
                service.disabled_reason = (
                    body.get('disabled_reason')
                    if body['status'] == 'disabled' else None)
            return self._respond('services.update', at, 200, {
                'service': self._service_body(service, at)})
