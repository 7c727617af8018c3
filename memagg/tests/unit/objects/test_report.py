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

"""What memagg-compute reports (memagg.objects.report): the wire round
trip, the columns it fills and what a receiver of each older version
gets."""
import datetime

import pytest

from memagg.common import context
from memagg.common import rpc
from memagg.objects import base
from memagg.objects import report

NOW = datetime.datetime(2024, 5, 1, 12, 0, 0)
UUID = '6695eb01-f6a4-8304-79aa-97f2502e193f'
SAMPLER = dict(sampler_backend='damon_paddr', sampler_error_mb=12.5,
               sampler_pages=4610, warming=True)
HISTORY_RECLAIM = dict(reclaimed_mb=300, promotion_rate=120.5)
RECLAIM = dict(HISTORY_RECLAIM, promotion_rate_pct=0.067,
               promotion_slo=358.4, reclaim_mechanism='madvise')
GRANT = '0b7c3e9a-2f41-4d8e-9a6b-5c1d2e3f4a5b'
LEDGER = dict(l1_puts=300, l1_gets=120, l1_flushes=0, l1_moved_in=0,
              l1_moved_out=44, l1_evicts=0, l1_used=256, l2_puts=10,
              l2_gets=3, l2_flushes=0, l2_moved_in=44, l2_moved_out=0,
              l2_evicts=0, l2_used=54)


def _report():
    return report.ComputeReport(
        host='node1', reported_at=NOW, memory_mb=4096, reserved_mb=512,
        vcpus=4, cpu_util=0.25, free_reservoir_mb=1000, lendable_mb=0,
        instances=[report.InstanceReport(
            uuid=UUID, name='vm1', project_id='p1', booked_mb=2048,
            current_mb=1024, target_mb=None, wss_mb=700, wss_maxavg_mb=None,
            estimator='badis/V/sampler', local_policy='cmms/equal',
            cpu_util=0.5, vcpus=2, **SAMPLER, **RECLAIM)],
        samples=[report.WssSample(
            instance_uuid=UUID, sampled_at=NOW, wss_mb=700,
            wss_maxavg_mb=None, current_mb=1024, target_mb=None,
            estimator='badis/V/sampler', cpu_util=1.0, **SAMPLER,
            **HISTORY_RECLAIM)],
        mem_used_mb=700,
        ledgers=[report.GrantLedger(grant_uuid=GRANT, **LEDGER)],
        local_room_mb=20480)


def test_report_survives_the_rpc_serializer():
    serializer = rpc.RequestContextSerializer(
        base.MemaggObjectSerializer())
    ctxt = context.RequestContext(project_id='p1', roles=['admin'])
    primitive = serializer.serialize_entity(ctxt, _report())
    assert primitive['memagg_object.name'] == 'ComputeReport'
    assert primitive['memagg_object.version'] == '1.6'
    again = serializer.deserialize_entity(ctxt, primitive)
    # Field by field: ovo's == also compares the order of the changed-field
    # list, which follows string hashing and so varies between runs.
    assert isinstance(again, report.ComputeReport)
    assert again.as_dict() == _report().as_dict()
    assert again.instances[0].uuid == UUID
    assert again.samples[0].sampled_at == NOW
    assert again.ledgers[0].as_dict() == dict(LEDGER, grant_uuid=GRANT)


@pytest.mark.parametrize('version', ['1.0', '1.3', '1.4'])
def test_a_receiver_before_1_5_gets_no_ledgers(version):
    data = _report().obj_to_primitive(
        target_version=version)['memagg_object.data']
    assert 'ledgers' not in data
    assert data['instances'][0]['memagg_object.data']['wss_mb'] == 700


@pytest.mark.parametrize('version', ['1.0', '1.5'])
def test_a_sender_before_1_6_stores_its_local_room_as_unknown(version):
    primitive = _report().obj_to_primitive(target_version=version)
    assert 'local_room_mb' not in primitive['memagg_object.data']
    older = report.ComputeReport.obj_from_primitive(primitive)
    host, _, _ = older.to_db_values()
    assert host['local_room_mb'] is None and host['lendable_mb'] == 0


def test_to_db_values_names_only_columns():
    host, instances, samples = _report().to_db_values()
    assert host == dict(name='node1', memory_mb=4096, reserved_mb=512,
                        vcpus=4, cpu_util=0.25, free_reservoir_mb=1000,
                        lendable_mb=0, local_room_mb=20480)
    assert instances[0]['uuid'] == UUID and instances[0]['wss_mb'] == 700
    assert instances[0]['vcpus'] == 2
    assert {k: instances[0][k] for k in SAMPLER} == SAMPLER
    assert {k: instances[0][k] for k in RECLAIM} == RECLAIM
    assert samples == [dict(instance_uuid=UUID, sampled_at=NOW, wss_mb=700,
                            wss_maxavg_mb=None, current_mb=1024,
                            target_mb=None, estimator='badis/V/sampler',
                            cpu_util=1.0, **SAMPLER, **HISTORY_RECLAIM)]
    assert _report().host_sample() == {'cpu_util': 0.25, 'mem_used_mb': 700}


def test_a_1_0_receiver_gets_a_1_0_report():
    primitive = _report().obj_to_primitive(target_version='1.0')
    data = primitive['memagg_object.data']
    assert primitive['memagg_object.version'] == '1.0'
    assert 'mem_used_mb' not in data
    instance = data['instances'][0]
    sample = data['samples'][0]
    assert instance['memagg_object.version'] == '1.0'
    assert 'vcpus' not in instance['memagg_object.data']
    assert sample['memagg_object.version'] == '1.0'
    assert 'cpu_util' not in sample['memagg_object.data']


def test_a_1_1_receiver_gets_no_local_policy():
    primitive = _report().obj_to_primitive(target_version='1.1')
    instance = primitive['memagg_object.data']['instances'][0]
    assert instance['memagg_object.version'] == '1.1'
    assert 'local_policy' not in instance['memagg_object.data']
    assert instance['memagg_object.data']['vcpus'] == 2


def _items_sent(version):
    """The data of the report's instances and samples as sent to a
    receiver of ``version``: two lists of dicts."""
    data = _report().obj_to_primitive(
        target_version=version)['memagg_object.data']
    return ([i['memagg_object.data'] for i in data['instances']],
            [s['memagg_object.data'] for s in data['samples']])


@pytest.mark.parametrize('version', ['1.0', '1.1', '1.2'])
def test_a_receiver_before_1_3_gets_no_sampler_fields(version):
    instances, samples = _items_sent(version)
    for item in instances + samples:
        assert not set(SAMPLER) & set(item)
    assert instances[0]['wss_mb'] == 700


def test_a_1_2_report_is_read_without_sampler_fields():
    """What a compute node of the release before sends: the scheduler
    reads it, and its rows leave the sampler columns to their defaults."""
    serializer = rpc.RequestContextSerializer(
        base.MemaggObjectSerializer())
    ctxt = context.RequestContext(project_id='p1', roles=['admin'])
    old = serializer.deserialize_entity(
        ctxt, _report().obj_to_primitive(target_version='1.2'))

    assert old.VERSION == '1.2'
    assert old.instances[0].local_policy == 'cmms/equal'
    host, instances, samples = old.to_db_values()
    for row in instances + samples:
        assert not set(SAMPLER) & set(row)


@pytest.mark.parametrize('version', ['1.0', '1.2', '1.3'])
def test_a_receiver_before_1_4_gets_no_reclaim_fields(version):
    instances, samples = _items_sent(version)
    for item in instances + samples:
        assert not set(RECLAIM) & set(item)


def test_a_1_3_report_is_read_without_reclaim_fields():
    """A compute node of the release before host reclaim's accounting:
    its rows leave the reclaim columns NULL and its sampler is kept."""
    old = report.ComputeReport.obj_from_primitive(
        _report().obj_to_primitive(target_version='1.3'))

    assert old.VERSION == '1.3'
    host, instances, samples = old.to_db_values()
    assert {k: instances[0][k] for k in SAMPLER} == SAMPLER
    for row in instances + samples:
        assert not set(RECLAIM) & set(row)


def test_reclaimed_memory_lowers_what_a_vm_without_a_wss_uses():
    """As the balloon lowers current_mb, host reclaim's paged-out memory
    lowers what a VM without a WSS counts as in RAM; a WSS counts as is."""
    def instance(**values):
        return report.InstanceReport(**{**dict(
            uuid=UUID, name='vm', project_id=None, booked_mb=2048,
            current_mb=2048, target_mb=None, wss_mb=None,
            wss_maxavg_mb=None, estimator=None, cpu_util=0.0), **values})

    assert report.resident_mb(instance(reclaimed_mb=800)) == 1248
    assert report.resident_mb(instance()) == 2048
    assert report.resident_mb(instance(reclaimed_mb=None)) == 2048
    assert report.resident_mb(instance(reclaimed_mb=4096)) == 0
    assert report.resident_mb(instance(wss_maxavg_mb=700,
                                       reclaimed_mb=800)) == 700


def test_a_1_0_report_still_gives_a_host_sample():
    old = report.ComputeReport.obj_from_primitive(
        _report().obj_to_primitive(target_version='1.0'))
    assert not old.obj_attr_is_set('mem_used_mb')
    # The instance's latest WSS stands in for its missing max-average.
    assert old.host_sample() == {'cpu_util': 0.25, 'mem_used_mb': 700}
    host, instances, samples = old.to_db_values()
    assert 'vcpus' not in instances[0] and 'cpu_util' not in samples[0]


def test_a_wrong_field_type_is_refused_with_its_name():
    try:
        report.InstanceReport(uuid=UUID, booked_mb='lots')
    except ValueError as exc:
        assert 'lots' in str(exc)
    else:
        raise AssertionError('booked_mb accepted a non-integer')
