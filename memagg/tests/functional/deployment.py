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

"""One running, authenticated memagg for the whole test session.

The session-scoped ``deployment`` fixture is what an operator's cloud looks
like to a client: the real Keystone of the ``keystone`` fixture,
memagg-api as a process with ``[api] auth_strategy = keystone`` and in
Keystone's catalog as service type ``memory-aggregation``, memagg-scheduler
on a RabbitMQ virtual host, and a migrated MariaDB database holding what
two compute nodes reported (``memagg.tests.functional.seed``). The Python
client, the ``openstack memagg`` CLI and tempest all test against it, so
the suite starts one Keystone and one API, not one per module.

Tests share it: each relies on the seeded data and on what it creates
itself, never on being alone.
"""
import dataclasses
import json
import pathlib
import subprocess
import sys
import uuid

import pytest
import requests

from memagg.api import microversion
from memagg.demo import keystone as demo_keystone
from memagg.tests import db_backends
from memagg.tests.functional import service_procs
from memagg.tests import polling

START_TIMEOUT = 60


@dataclasses.dataclass
class Deployment:
    """A running memagg behind Keystone, and what was seeded in it."""

    keystone: demo_keystone.Keystone
    url: str
    config_file: pathlib.Path
    hosts: list
    instances: dict
    grants: list
    migrations: list


def _config(directory, keystone, rabbit_url, database_url, port):
    run = uuid.uuid4().hex[:10]
    return service_procs.write_config(directory / 'memagg.conf', {
        'DEFAULT': {'transport_url': rabbit_url,
                    'control_exchange': 'memagg_deployment_%s' % run,
                    'host': 'controller-%s' % run,
                    # The seeded reports stay fresh for the whole session.
                    'service_down_time': 3600},
        'database': {'connection': database_url},
        'api': {'host': '127.0.0.1', 'port': port,
                'auth_strategy': 'keystone'},
        'keystone_authtoken': keystone.authtoken_options(),
        'scheduler': {'topic': 'memagg-scheduler-%s' % run,
                      'report_topic': 'memagg-reports-%s' % run},
        'consolidation': {'interval': 0, 'poll_interval': 0.1},
    })


def _memagg(config_file, *args):
    """Run a memagg module of this interpreter with ``config_file``;
    its stdout."""
    result = subprocess.run(
        [sys.executable, '-m'] + list(args[:1]) +
        ['--config-file', str(config_file)] + list(args[1:]),
        capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL)
    if result.returncode:
        raise RuntimeError('%s failed (%d):\n%s'
                           % (' '.join(args), result.returncode,
                              result.stderr[-4000:]))
    return result.stdout


def _api_answers(url, proc):
    if not proc.alive():
        raise RuntimeError('memagg-api exited:\n%s' % proc.log()[-4000:])
    return service_procs.answers(url + '/')


def _scheduler_up(url, token):
    resp = requests.get(url + '/v1/services', timeout=10,
                        params={'binary': 'memagg-scheduler'},
                        headers={'X-Auth-Token': token,
                                 microversion.HEADER: 'memory-aggregation '
                                                      'latest'})
    return resp.status_code == 200 and any(
        s['state'] == 'up' for s in resp.json()['services'])


@pytest.fixture(scope='session')
def deployment(keystone, rabbit_url, tmp_path_factory):
    """memagg-api behind the session's Keystone, memagg-scheduler on
    RabbitMQ and MariaDB, seeded; stopped at the session's end."""
    directory = tmp_path_factory.mktemp('deployment')
    port = service_procs.free_port()
    url = 'http://127.0.0.1:%d' % port
    with db_backends.provisioned('mysql', directory) as database_url:
        config = _config(directory, keystone, rabbit_url, database_url, port)
        _memagg(config, 'memagg.cmd.manage', 'db', 'upgrade')
        seed = json.loads(_memagg(
            config, 'memagg.tests.functional.seed',
            keystone.admin.project_id, keystone.member.project_id))
        keystone.register_endpoint('memory-aggregation', 'memagg', url)
        procs = []
        try:
            for name in ('memagg-scheduler', 'memagg-api'):
                procs.append(service_procs.Process(
                    name, ['--config-file', str(config)],
                    directory / ('%s.log' % name)))
            polling.wait_for(lambda: _api_answers(url, procs[-1]),
                             START_TIMEOUT,
                             message='memagg-api answering on %s' % url)
            token = keystone.token(keystone.admin)
            polling.wait_for(lambda: _scheduler_up(url, token),
                             START_TIMEOUT, interval=0.5,
                             message='memagg-scheduler heartbeating')
            yield Deployment(keystone=keystone, url=url, config_file=config,
                             **seed)
        finally:
            for proc in reversed(procs):
                proc.stop()
