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

"""A real Placement for functional tests: the installed openstack-placement
package's WSGI application under uWSGI on loopback (as DevStack runs it),
on a SQLite database that placement-manage db sync creates, with
``[api] auth_strategy = noauth2``: a request whose X-Auth-Token is
``admin`` is an admin's.

:func:`placement_server` is a session fixture (registered in conftest.py);
:class:`PlacementServer` also has the REST calls tests set Placement up
with: resource providers, MEMORY_MB inventories, allocations.
"""
import contextlib
import os
import subprocess
import uuid

import pytest
import requests

from memagg.tests.functional import service_procs
from memagg.tests import polling

TOKEN = 'admin'
#: The microversion of the set-up calls (Placement 16.0.0's highest).
MICROVERSION = '1.39'
START_TIMEOUT = 60


class PlacementServer:
    """A running Placement at ``url``."""

    def __init__(self, url, process):
        self.url = url
        self.process = process

    def request(self, method, path, body=None, expect=(200, 204)):
        """One REST call as admin; its JSON body (None when empty).
        AssertionError with Placement's answer when the status is not in
        ``expect``."""
        resp = requests.request(
            method, self.url + path, json=body, timeout=30,
            headers={'X-Auth-Token': TOKEN,
                     'OpenStack-API-Version': 'placement %s' % MICROVERSION})
        assert resp.status_code in expect, '%s %s: %d %s' % (
            method, path, resp.status_code, resp.text)
        return resp.json() if resp.content else None

    def create_provider(self, name, total, reserved=0, allocation_ratio=1.0,
                        max_unit=None):
        """A resource provider named ``name`` with a MEMORY_MB inventory
        (and 64 VCPUs, as a compute node has); its UUID."""
        rp = str(uuid.uuid4())
        self.request('POST', '/resource_providers',
                     {'name': name, 'uuid': rp})
        self.request('PUT', '/resource_providers/%s/inventories' % rp, {
            'resource_provider_generation': 0,
            'inventories': {
                'MEMORY_MB': {'total': total, 'reserved': reserved,
                              'allocation_ratio': allocation_ratio,
                              'max_unit': max_unit or total},
                'VCPU': {'total': 64}}})
        return rp

    def generation(self, rp):
        return self.request('GET', '/resource_providers/%s' % rp)[
            'generation']

    def memory(self, rp):
        """The provider's MEMORY_MB inventory (a dict, as Placement
        answers)."""
        return self.request('GET', '/resource_providers/%s/inventories/'
                                   'MEMORY_MB' % rp)

    def set_memory(self, rp, **fields):
        """Change fields of the provider's MEMORY_MB inventory, as another
        writer (nova-compute, an operator) would."""
        inventory = self.memory(rp)
        inventory.update(fields)
        self.request('PUT', '/resource_providers/%s/inventories/MEMORY_MB'
                     % rp, inventory)

    def allocate(self, rp, memory_mb):
        """Allocate ``memory_mb`` of the provider to a new consumer, as
        Nova's scheduler does for a VM; the consumer's UUID."""
        consumer = str(uuid.uuid4())
        self.request('PUT', '/allocations/%s' % consumer, {
            'allocations': {rp: {'resources': {'MEMORY_MB': memory_mb}}},
            'project_id': str(uuid.uuid4()), 'user_id': str(uuid.uuid4()),
            'consumer_generation': None, 'consumer_type': 'INSTANCE'})
        return consumer

    def used(self, rp):
        return self.request('GET', '/resource_providers/%s/usages' % rp)[
            'usages'].get('MEMORY_MB', 0)


def _answers(url, process):
    if not process.alive():
        raise RuntimeError('Placement exited:\n%s' % process.log()[-4000:])
    return service_procs.answers(url + '/')


@contextlib.contextmanager
def running(directory):
    """Start Placement with its files in ``directory``; stop it after."""
    db = directory / 'placement.sqlite'
    service_procs.write_config(directory / 'placement.conf', {
        'placement_database': {'connection': 'sqlite:///%s' % db},
        'api': {'auth_strategy': 'noauth2'},
    })
    subprocess.run([os.path.join(service_procs.BIN_DIR, 'placement-manage'),
                    '--config-dir', str(directory), 'db', 'sync'],
                   check=True, capture_output=True, timeout=120,
                   stdin=subprocess.DEVNULL)
    port = service_procs.free_port()
    url = 'http://127.0.0.1:%d' % port
    process = service_procs.Process('uwsgi', [
        '--strict', '--master', '--need-app', '--die-on-term',
        '--no-orphans', '--http-socket', '127.0.0.1:%d' % port,
        '--processes', '1', '--threads', '4', '--enable-threads',
        '--module', 'placement.wsgi.api:application',
        '--add-header', 'Connection: close',
    ], directory / 'placement.log',
        # Where placement.wsgi reads placement.conf from.
        env={'OS_PLACEMENT_CONFIG_DIR': str(directory)})
    try:
        polling.wait_for(lambda: _answers(url, process), START_TIMEOUT,
                         message='Placement answering on %s' % url)
        yield PlacementServer(url, process)
    finally:
        process.stop()


@pytest.fixture(scope='session')
def placement_server(tmp_path_factory):
    """One real Placement for the test session (see the module)."""
    with running(tmp_path_factory.mktemp('placement')) as server:
        yield server
