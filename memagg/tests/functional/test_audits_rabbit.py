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

"""Consolidation rounds end to end with real processes: memagg-api and
memagg-scheduler on RabbitMQ and MariaDB. An operator POSTs an audit, the
scheduler plans it from what the compute nodes reported (written to the
DB here as memagg-compute reports it), and GET shows the ordered
migrations with their reasons; asked to execute it without a compute API
(the ``none`` driver: Nova cannot run here), the plan fails action by
action, with the reasons on the audit."""
import datetime
import uuid

from oslo_utils import timeutils
import pytest
import requests

from memagg.db import listings as db_listings
from memagg.db import reports as db_reports
from memagg.db.sqlalchemy import models
from memagg.tests import concurrency
from memagg.tests.functional import service_procs
from memagg.tests import polling
from memagg.tests.unit.db import rows

pytestmark = [pytest.mark.functional, pytest.mark.slow]

LATEST = {'OpenStack-API-Version': 'memory-aggregation latest'}
VM_A, VM_B, VM_C, VM_D = ('%08d-0000-4000-8000-000000000000' % n
                          for n in range(1, 5))


def _host(ctxt, name, cpu, vms):
    """Host ``name`` (8 cores, 16 GiB) as memagg-compute reports it, with
    two periods of samples: cpu ``cpu``, ``vms`` [(uuid, wss_mb, cores)]."""
    now = timeutils.utcnow().replace(microsecond=0)
    db_reports.report_ingest(
        ctxt, dict(name=name, vcpus=8, memory_mb=16384, reserved_mb=0,
                   cpu_util=cpu),
        [dict(uuid=vm, name=vm[:8], booked_mb=2 * wss, current_mb=wss,
              wss_mb=wss, wss_maxavg_mb=wss, cpu_util=cores / 2, vcpus=2)
         for vm, wss, cores in vms], [], reported_at=now)
    for minutes in (1, 0):
        at = now - datetime.timedelta(minutes=minutes)
        rows.insert(models.HostSample, dict(
            host=name, sampled_at=at, cpu_util=cpu,
            mem_used_mb=sum(wss for _, wss, _ in vms)))
        rows.insert(models.WssSample, *[
            dict(instance_uuid=vm, host=name, sampled_at=at, wss_mb=wss,
                 wss_maxavg_mb=wss, cpu_util=cores) for vm, wss, cores in vms])


def plane_options(rabbit_url, mysql_db):
    """Config sections of a memagg-scheduler and memagg-api of their own
    (exchange, topic, port) on ``rabbit_url`` and ``mysql_db`` that plan
    audits on request only."""
    run = uuid.uuid4().hex[:10]
    return {
        'DEFAULT': {'transport_url': rabbit_url,
                    'control_exchange': 'memagg_test_%s' % run,
                    'report_interval': 1, 'host': 'ctl-%s' % run,
                    # The hand-written reports stay fresh for the test.
                    'service_down_time': 600},
        'database': {'connection': mysql_db},
        'api': {'host': '127.0.0.1', 'port': service_procs.free_port(),
                'auth_strategy': 'noauth'},
        'scheduler': {'topic': 'memagg-scheduler-%s' % run,
                      'report_topic': 'memagg-reports-%s' % run},
        'consolidation': {'interval': 0, 'max_retries': 0,
                          'poll_interval': 0.1},
    }


@pytest.fixture
def plane(conf, mysql_db, rabbit_url, tmp_path, admin_context):
    """memagg-scheduler and memagg-api running; yields the API's URL."""
    with service_procs.control_plane(conf, rabbit_url, tmp_path,
                                     plane_options(rabbit_url, mysql_db)
                                     ) as plane:
        yield plane


def _audit(url, audit_uuid, states):
    audit = requests.get('%s/v1/audits/%s' % (url, audit_uuid),
                         headers=LATEST, timeout=10).json()['audit']
    return audit if audit['state'] in states else None


def test_an_audit_asked_for_is_planned_and_shown(plane, admin_context):
    url, procs = plane
    # hot: 7.6 of 8 cores in use; spare: busy enough not to be emptied,
    # with room; idle: nearly nothing.
    _host(admin_context, 'hot', 0.95, [(VM_A, 2000, 4.0),
                                       (VM_B, 1000, 3.6)])
    _host(admin_context, 'spare', 0.2, [(VM_C, 10000, 1.6)])
    _host(admin_context, 'idle', 0.05, [(VM_D, 500, 0.4)])

    response = requests.post(url + '/v1/audits', headers=LATEST, json={
        'parameters': {'overload_cpu': 'threshold',
                       'overload_cpu_params': {'threshold': 0.8},
                       'vm_selection': 'minimum_migration_time'}},
        timeout=30)
    assert response.status_code == 202, response.text
    created = response.json()['audit']
    assert created['state'] == 'pending'

    audit = polling.wait_for(
        lambda: service_procs.alive(procs) and _audit(
            url, created['uuid'], ('recommended', 'failed')),
        60, interval=0.2, message='audit planned')

    assert audit['state'] == 'recommended', audit['reason']
    assert [(a['sequence'], a['action_type'], a['instance_uuid'],
             a['source_host'], a['dest_host'], a['reason'], a['state'])
            for a in audit['actions']] == [
        # The overloaded host sheds its smallest VM, which relieves it...
        (0, 'migrate', VM_B, 'hot', 'spare', 'overload:cpu', 'pending'),
        # ...then the idle host is emptied onto the fullest host that
        # takes its VM, and powered off.
        (1, 'migrate', VM_D, 'idle', 'spare', 'underload:cpu+memory',
         'pending'),
        (2, 'power_off', None, 'idle', None, 'underload:cpu+memory',
         'pending')]
    assert audit['unplaced'] is None
    assert audit['reason'].startswith('1 overloaded host (hot: cpu); '
                                      '1 underloaded host; 2 migrations')
    assert audit['parameters']['overload_cpu'] == 'threshold'

    # Executed without Nova: each migration fails with the driver's
    # message, the power-off is skipped, the audit fails. Of requests at
    # once, one only is accepted.
    answers = concurrency.at_once(lambda: requests.post(
        '%s/v1/audits/%s/execute' % (url, audit['uuid']), headers=LATEST,
        timeout=30))
    assert sorted(a.status_code for a in answers) == [202] + [409] * (
        len(answers) - 1), [a.text for a in answers]
    for answer in answers:
        if answer.status_code == 202:
            assert answer.json()['audit']['state'] == 'executing'
        else:
            assert 'only a recommended audit can be executed' in \
                answer.json()['errors'][0]['detail']
    done = polling.wait_for(
        lambda: service_procs.alive(procs) and _audit(
            url, audit['uuid'], ('succeeded', 'failed')),
        60, interval=0.2, message='execution ended')
    assert done['state'] == 'failed'
    assert [a['state'] for a in done['actions']] == [
        'failed', 'failed', 'skipped']
    assert 'compute_api_driver' in done['reason']
    again = requests.post('%s/v1/audits/%s/execute' % (url, audit['uuid']),
                          headers=LATEST, timeout=30)
    assert again.status_code == 409
    assert 'is failed' in again.json()['errors'][0]['detail']


def test_bad_parameters_are_refused_before_any_audit(plane, admin_context):
    url, _procs = plane
    response = requests.post(url + '/v1/audits', headers=LATEST, json={
        'parameters': {'placement': 'first_fit'}}, timeout=30)

    assert response.status_code == 400
    error = response.json()['errors'][0]
    assert error['field'] == 'parameters.placement'
    assert 'best_fit_decreasing' in error['detail']
    assert db_listings.list_resources(admin_context, 'audits') == []
