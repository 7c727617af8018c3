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

"""The API fuzzed from its own contract, api-ref/openapi.json.

schemathesis generates requests from the document (its coverage and
fuzzing phases, valid and invalid data alike: the document has no examples
for its examples phase) and sends them to memagg-api as an operator runs
it: the console script under uWSGI, on a real MariaDB database seeded with
memagg.tests.unit.api.data, with a real memagg-scheduler on RabbitMQ
behind it. A schemathesis.toml mixes the seeded rows' UUIDs and host names
and the served microversions into what it generates, so that requests
reach real rows and every route, beside the random values. Every response
must be no server error (5xx), carry a status the document lists for the
operation, and match the document's content type, headers and schema. The
run is bounded (a fixed seed and number of examples per operation), so
CI's cost is fixed; the case count comes from schemathesis's JSON report.

No memagg-compute runs (it needs a hypervisor host of its own): the
scheduler's calls to a compute node time out after [DEFAULT]
rpc_response_timeout, shortened here, and the few operations that need
one (NEED_COMPUTE) may answer the 503 the document lists for them. That
is the right answer while a service the request needs is down; every
other operation must never answer 5xx.
"""
import json
import os
import subprocess
import uuid

import pytest
import sqlalchemy
from sqlalchemy import orm

from memagg.db import facade as db_facade
from memagg.db.sqlalchemy import models
from memagg.tests.functional import service_procs
from memagg.tests import polling
from memagg.tests.unit.api import data

pytestmark = [pytest.mark.functional, pytest.mark.slow]

DOCUMENT = os.path.join(os.path.dirname(__file__), '..', '..', '..',
                        'api-ref', 'openapi.json')
# Per operation and phase; with the coverage phase's own cases this comes
# to a few thousand requests in all.
MAX_EXAMPLES = 60
SEED = 18
MIN_CASES = 2000
CHECKS = ('not_a_server_error', 'status_code_conformance',
          'content_type_conformance', 'response_schema_conformance',
          'response_headers_conformance')
RUN_TIMEOUT = 600
STOP_TIMEOUT = 120
# Services start slowly on a busy 2-core machine.
START_TIMEOUT = 120
# The operations memagg-scheduler completes by calling the memagg-compute
# of a host: 503 when that host does not answer in time.
NEED_COMPUTE = ['grants_create_grant', 'grants_delete_grant',
                'hosts_reclaim_host']
# Each of their valid requests keeps the scheduler busy for a few of those
# timeouts: fewer of them keep the run short.
NEED_COMPUTE_EXAMPLES = 10
# States of audits and migrations memagg-scheduler has yet to finish.
BUSY_AUDIT_STATES = ('pending', 'planning', 'executing')
BUSY_MIGRATION_STATES = ('queued', 'running')


@pytest.fixture
def live_api(conf, mysql_db, rabbit_url, tmp_path):
    """memagg-scheduler and memagg-api (uWSGI) on the seeded MariaDB
    database; yields the API's URL."""
    data.load()
    run = uuid.uuid4().hex[:10]
    port = service_procs.free_port()
    options = {
        'DEFAULT': {'transport_url': rabbit_url,
                    'control_exchange': 'memagg_fuzz_%s' % run,
                    'host': 'ctl-%s' % run,
                    # No memagg-compute answers: fail such calls fast.
                    'rpc_response_timeout': 2,
                    'service_down_time': 600},
        'database': {'connection': mysql_db},
        'api': {'host': '127.0.0.1', 'port': port, 'workers': 2,
                'threads': 2, 'auth_strategy': 'noauth'},
        'scheduler': {'topic': 'memagg-scheduler-%s' % run,
                      'report_topic': 'memagg-reports-%s' % run},
        'consolidation': {'interval': 0, 'max_retries': 0,
                          'poll_interval': 0.1},
    }
    with service_procs.control_plane(
            conf, rabbit_url, tmp_path, options,
            start_timeout=START_TIMEOUT, stop_timeout=STOP_TIMEOUT) as plane:
        yield plane


def _config(path):
    """schemathesis.toml: values it mixes into what it generates, so that
    requests name the seeded rows and ask for microversions that serve
    every route, beside the random ones."""
    dictionaries = {
        'versions': ['memory-aggregation latest', 'memory-aggregation 1.0',
                     'memory-aggregation 1.3', 'memory-aggregation 1.6'],
        'uuids': [data.INSTANCE_A, data.INSTANCE_B, data.GRANT, data.AUDIT,
                  data.MIGRATION, data.MISSING],
        'instances': [data.INSTANCE_A, data.INSTANCE_B, data.MISSING],
        'hosts': ['host-1', 'host-2', 'no-such-host'],
    }
    bindings = {
        'header.OpenStack-API-Version': ('versions', 0.8),
        'path.uuid': ('uuids', 0.6),
        'path.name': ('hosts', 0.6),
        'query.host': ('hosts', 0.5),
        'query.instance_uuid': ('instances', 0.5),
        'body.instance_uuid': ('instances', 0.7),
        'body.dest_host': ('hosts', 0.7),
    }
    lines = []
    for name, values in dictionaries.items():
        lines += ['[dictionaries.%s]' % name,
                  'values = %s' % json.dumps(values), '']
    lines.append('[parameters]')
    for key, (name, probability) in bindings.items():
        lines.append('"%s" = { dictionary = "%s", probability = %s }'
                     % (key, name, probability))
    lines += ['', '[[operations]]',
              'include-operation-id = %s' % json.dumps(NEED_COMPUTE),
              'generation.max-examples = %d' % NEED_COMPUTE_EXAMPLES,
              'checks.not_a_server_error.expected-statuses = '
              '["2xx", "3xx", "4xx", "503"]']
    path.write_text('\n'.join(lines) + '\n')
    return path


def _schemathesis(url, workdir):
    config = _config(workdir / 'schemathesis.toml')
    cmd = [os.path.join(service_procs.BIN_DIR, 'schemathesis'),
           '--config-file', str(config), 'run',
           os.path.abspath(DOCUMENT), '--url', url,
           '--phases', 'examples,coverage,fuzzing', '--mode', 'all',
           '--checks', ','.join(CHECKS),
           '--max-examples', str(MAX_EXAMPLES), '--seed', str(SEED),
           '--workers', '2', '--no-shrink', '--continue-on-failure',
           '--suppress-health-check', 'all',
           '--request-timeout', '30', '--warnings', 'off',
           '--report', 'json', '--report-dir', str(workdir / 'report')]
    # In the test's directory: schemathesis keeps a cache where it runs.
    return subprocess.run(cmd, capture_output=True, text=True,
                          timeout=RUN_TIMEOUT, cwd=workdir,
                          env=dict(os.environ, NO_COLOR='1',
                                   SCHEMATHESIS_HOOKS=''))


def _scheduler_idle():
    """Whether memagg-scheduler has finished the audits and migrations
    the run asked for (it stops only once they are done)."""
    with orm.Session(db_facade.get_engine()) as session:
        audits = session.query(models.Audit).filter(sqlalchemy.or_(
            models.Audit.state.in_(BUSY_AUDIT_STATES),
            sqlalchemy.and_(models.Audit.state == 'recommended',
                            models.Audit.auto_execute.is_(True)))).count()
        migrations = session.query(models.Migration).filter(
            models.Migration.status.in_(BUSY_MIGRATION_STATES)).count()
    return audits == 0 and migrations == 0


def _report(workdir):
    (path,) = (workdir / 'report').glob('json-*.json')
    return json.loads(path.read_text())


# Its run and the services' start and stop, with room for a busy machine.
@pytest.mark.timeout(RUN_TIMEOUT + 2 * (START_TIMEOUT + STOP_TIMEOUT))
def test_fuzzed_from_the_document(live_api, tmp_path):
    url, procs = live_api
    result = _schemathesis(url, tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-20000:]
    report = _report(tmp_path)
    cases = report['test_cases']
    assert cases['with_failures'] == 0 and cases['errored'] == 0, output
    assert cases['generated'] >= MIN_CASES, cases
    assert report['operations']['tested'] == report['operations']['total']
    print('schemathesis: %d cases in %.0f s' % (cases['generated'],
                                                report['running_time']))
    # Negative cases were sent and rejected, valid ones accepted.
    rates = report['valid_rates']
    assert sum(r['rejected'] for op in rates.values()
               for r in op.values()) > MIN_CASES // 10, rates
    assert sum(r['accepted'] for op in rates.values()
               for r in op.values()) > MIN_CASES // 10, rates
    service_procs.alive(procs)
    polling.wait_for(_scheduler_idle, 120,
                     message='memagg-scheduler done with the audits and '
                             'migrations the run asked for')
