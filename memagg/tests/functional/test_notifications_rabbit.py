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

"""Versioned notifications on RabbitMQ from real processes: with
``[oslo_messaging_notifications] driver = messagingv2``, a listener on the
versioned topic hears an audit created through memagg-api, planned by
memagg-scheduler and executed (without Nova, so its actions fail), each
state change once, from the process that made it."""
import threading
import uuid

import oslo_messaging as messaging
import pytest
import requests

from memagg.tests.functional import service_procs
from memagg.tests.functional import test_audits_rabbit as audits_rabbit
from memagg.tests import polling

pytestmark = [pytest.mark.functional, pytest.mark.slow]

LATEST = audits_rabbit.LATEST


class _Heard:
    """Endpoint of the listener: keeps every INFO notification."""

    def __init__(self):
        self.lock = threading.Lock()
        self.messages = []

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        with self.lock:
            self.messages.append((publisher_id, event_type, payload))

    def of(self, resource):
        with self.lock:
            return [(publisher, payload) for publisher, event, payload
                    in self.messages
                    if event == 'memagg.%s.update' % resource]


@pytest.fixture
def plane_and_listener(conf, mysql_db, rabbit_url, tmp_path):
    """memagg-scheduler and memagg-api sending notifications on a topic of
    their own, and a listener of it; yields (API URL, processes, heard,
    host)."""
    topic = 'versioned_notifications_%s' % uuid.uuid4().hex[:10]
    options = dict(audits_rabbit.plane_options(rabbit_url, mysql_db),
                   oslo_messaging_notifications={'driver': 'messagingv2',
                                                 'topics': topic})
    heard = _Heard()
    transport = messaging.get_notification_transport(conf.conf,
                                                     url=rabbit_url)
    listener = messaging.get_notification_listener(
        transport, [messaging.Target(topic=topic,
                                     exchange=options['DEFAULT'][
                                         'control_exchange'])],
        [heard], executor='threading')
    # Listening before anything is sent: its queue is declared on start.
    listener.start()
    try:
        with service_procs.control_plane(conf, rabbit_url, tmp_path,
                                         options) as (url, procs):
            yield url, procs, heard, options['DEFAULT']['host']
    finally:
        listener.stop()
        listener.wait()
        transport.cleanup()


def test_an_audit_tells_each_state_change(plane_and_listener,
                                          admin_context):
    url, procs, heard, host = plane_and_listener
    audits_rabbit._host(admin_context, 'hot', 0.95, [
        (audits_rabbit.VM_A, 2000, 4.0), (audits_rabbit.VM_B, 1000, 3.6)])
    audits_rabbit._host(admin_context, 'spare', 0.2, [
        (audits_rabbit.VM_C, 10000, 1.6)])
    audits_rabbit._host(admin_context, 'idle', 0.05, [
        (audits_rabbit.VM_D, 500, 0.4)])

    response = requests.post(url + '/v1/audits', headers=LATEST, json={
        'parameters': {'overload_cpu': 'threshold',
                       'overload_cpu_params': {'threshold': 0.8}}},
        timeout=30)
    assert response.status_code == 202, response.text
    audit_uuid = response.json()['audit']['uuid']
    polling.wait_for(
        lambda: service_procs.alive(procs) and any(
            p['memagg_object.data']['state'] == 'recommended'
            for _, p in heard.of('audit')),
        60, interval=0.1, message='audit planned, notified')
    executed = requests.post('%s/v1/audits/%s/execute' % (url, audit_uuid),
                             headers=LATEST, timeout=30)
    assert executed.status_code == 202, executed.text
    polling.wait_for(
        lambda: service_procs.alive(procs) and any(
            p['memagg_object.data']['state'] == 'failed'
            for _, p in heard.of('audit')),
        60, interval=0.1, message='audit ended, notified')

    audits = heard.of('audit')
    assert {p['memagg_object.name'] for _, p in audits} == {'AuditPayload'}
    assert {p['memagg_object.version'] for _, p in audits} == {'1.0'}
    assert {p['memagg_object.data']['uuid'] for _, p in audits} == {
        audit_uuid}
    assert [(publisher, p['memagg_object.data']['previous_state'],
             p['memagg_object.data']['state']) for publisher, p in audits] == [
        ('memagg-api:%s' % host, None, 'pending'),
        ('memagg-scheduler:%s' % host, 'pending', 'planning'),
        ('memagg-scheduler:%s' % host, 'planning', 'recommended'),
        ('memagg-api:%s' % host, 'recommended', 'executing'),
        ('memagg-scheduler:%s' % host, 'executing', 'failed')]
    # Each action of the plan ran and ended, told by the scheduler that ran
    # it; the migrations were asked for and failed (no Nova here).
    scheduler = 'memagg-scheduler:%s' % host
    actions = sorted(
        (p['memagg_object.data']['sequence'],
         p['memagg_object.data']['previous_state'],
         p['memagg_object.data']['state'], publisher)
        for publisher, p in heard.of('action'))
    assert actions == [
        (0, 'pending', 'running', scheduler),
        (0, 'running', 'failed', scheduler),
        (1, 'pending', 'running', scheduler),
        (1, 'running', 'failed', scheduler),
        (2, 'pending', 'skipped', scheduler)]
    by_vm = {}
    for publisher, p in heard.of('migration'):
        data = p['memagg_object.data']
        assert (publisher, p['memagg_object.version']) == (scheduler, '1.0')
        by_vm.setdefault(data['instance_uuid'], []).append(
            (data['previous_state'], data['status'], data['attempts']))
    assert by_vm == {vm: [(None, 'queued', 0), ('queued', 'running', 1),
                          ('running', 'failed', 1)]
                     for vm in (audits_rabbit.VM_B, audits_rabbit.VM_D)}
