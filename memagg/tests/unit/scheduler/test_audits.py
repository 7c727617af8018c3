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

"""Consolidation rounds on SQLite: hosts, VMs and samples written to the
DB as memagg-compute reports them; the plan stored on the audit."""
import datetime
import logging

from oslo_utils import timeutils
import pytest

from memagg.common import context
from memagg.conf import CONF
from memagg.db import audits as db_audits
from memagg.db import listings as db_listings
from memagg.db import reports as db_reports
from memagg.db.sqlalchemy import models
from memagg.scheduler import audits
from memagg.scheduler import consolidation
from memagg.tests.unit.db import rows

HISTORY = 2


def _vm(n):
    return '00000000-0000-4000-8000-%012d' % n


def _host(name, vcpus, memory_mb, cpu, vms, reserved_mb=0, state='active',
          reported_at=None):
    """Report host ``name`` with ``vms`` [(uuid, booked_mb, wss_maxavg_mb,
    cores)], a host sample per value of ``cpu`` (its memory use is the sum
    of the VMs' WSS) and a cpu sample per VM at the same times."""
    now = reported_at or timeutils.utcnow()
    db_reports.report_ingest(
        _ctxt(), dict(name=name, vcpus=vcpus, memory_mb=memory_mb,
                      reserved_mb=reserved_mb, cpu_util=cpu[-1], state=state),
        [dict(uuid=uuid, name=uuid[-4:], booked_mb=booked,
              current_mb=booked, wss_mb=wss, wss_maxavg_mb=wss,
              cpu_util=cores / 2, vcpus=2)
         for uuid, booked, wss, cores in vms], [], reported_at=now)
    used = sum(wss for _, _, wss, _ in vms)
    times = [now - datetime.timedelta(minutes=len(cpu) - i)
             for i in range(len(cpu))]
    rows.insert(models.HostSample, *[
        dict(host=name, sampled_at=at, cpu_util=c, mem_used_mb=used)
        for at, c in zip(times, cpu)])
    if vms:
        rows.insert(models.WssSample, *[
            dict(instance_uuid=uuid, host=name, sampled_at=at,
                 wss_mb=wss, wss_maxavg_mb=wss, cpu_util=cores)
            for uuid, _, wss, cores in vms for at in times])


def _ctxt():
    return context.get_admin_context()


@pytest.fixture
def rounds(conf, sqlite_db):
    """Simple detectors whose decisions the tests can work out by hand."""
    conf.config(group='consolidation', history_length=HISTORY,
                overload_cpu='threshold',
                overload_cpu_params='{"threshold": 0.8}',
                underload_cpu='last_n_average', underload_mem='last_n_average',
                vm_selection='minimum_migration_time')
    return conf


def _plan(memory_basis='wss', parameters=None):
    audit = db_audits.audit_create(_ctxt(), dict(memory_basis=memory_basis,
                                                 parameters=parameters))
    result = audits.run_audit(_ctxt(), audit.uuid)
    assert result is not None
    return db_audits.audit_get(_ctxt(), audit.uuid)


def _actions(audit):
    return [(a.sequence, a.action_type, a.instance_uuid, a.source_host,
             a.dest_host, a.reason) for a in audit.actions]


def test_an_overloaded_host_sheds_the_vm_that_relieves_it(rounds):
    # busy: 7.6 of 8 cores in use (0.95 > 0.8). Its smallest VM (vm 2,
    # 1000 MiB) takes 3.6 cores with it, which leaves 0.5: relieved.
    _host('busy', 8, 16384, [0.95, 0.95],
          [(_vm(1), 4096, 2000, 4.0), (_vm(2), 2048, 1000, 3.6)])
    # spare: 1.6 cores used (0.2, not underloaded: its memory is 0.61),
    # 4.8 free of its 0.8 x 8 = 6.4.
    _host('spare', 8, 16384, [0.2, 0.2], [(_vm(3), 12288, 10000, 1.6)])

    audit = _plan()

    assert audit.state == 'recommended'
    assert _actions(audit) == [
        (0, 'migrate', _vm(2), 'busy', 'spare', 'overload:cpu')]
    assert audit.unplaced is None
    assert audit.reason.startswith('1 overloaded host (busy: cpu); '
                                   '0 underloaded hosts; 1 migration')


def test_a_vm_that_migrated_lately_stays(rounds):
    # As above, but vm 2 moved to busy 10 minutes ago, within the hour's
    # cool-down: vm 1 (4 cores) leaves instead. Its failed migration and
    # vm 1's of two hours ago hold nothing back.
    _host('busy', 8, 16384, [0.95, 0.95],
          [(_vm(1), 4096, 2000, 4.0), (_vm(2), 2048, 1000, 3.6)])
    _host('spare', 8, 16384, [0.2, 0.2], [(_vm(3), 12288, 10000, 1.6)])
    rows.insert(models.Migration,
                dict(instance_uuid=_vm(2), status='succeeded',
                     created_at=rows.ago(minutes=10)),
                dict(instance_uuid=_vm(1), status='failed',
                     created_at=rows.ago(minutes=5)),
                dict(instance_uuid=_vm(1), status='succeeded',
                     created_at=rows.ago(hours=2)))

    audit = _plan()

    assert _actions(audit) == [
        (0, 'migrate', _vm(1), 'busy', 'spare', 'overload:cpu')]
    # An audit may lift the cool-down for its round.
    assert _actions(_plan(parameters={'migration_cooldown': 0})) == [
        (0, 'migrate', _vm(2), 'busy', 'spare', 'overload:cpu')]


def test_recent_is_when_each_vm_last_moved(rounds):
    now = rows.ago(seconds=0)
    rows.insert(models.Migration,
                dict(instance_uuid=_vm(1), status='succeeded',
                     created_at=now - datetime.timedelta(minutes=50)),
                dict(instance_uuid=_vm(1), status='running',
                     created_at=now - datetime.timedelta(minutes=20)),
                dict(instance_uuid=_vm(2), status='queued',
                     created_at=now - datetime.timedelta(minutes=70)),
                dict(instance_uuid=_vm(3), status='failed',
                     created_at=now - datetime.timedelta(minutes=1)))
    controls = consolidation.load_algorithms(
        CONF.consolidation, {'migration_cooldown': 3600}).controls

    recent = audits.recent(_ctxt(), controls, now)

    assert {uuid: recent.now - at for uuid, at in recent.moved_at.items()
            } == {_vm(1): 1200.0}
    # Every migration queued within the hour loaded its hosts, the failed
    # one too; the one of 70 minutes ago is past.
    assert recent.host_moves == {'host-1': 3, 'host-2': 3}


def test_an_underloaded_host_is_emptied_then_powered_off(rounds):
    _host('idle', 8, 16384, [0.1, 0.1], [(_vm(1), 2048, 1000, 0.8)])
    _host('work', 8, 16384, [0.6, 0.6], [(_vm(2), 8192, 8000, 4.8)])
    # A standby host is a round's host it may wake, not one to empty; a
    # host silent for longer than service_down_time is not in the round.
    _host('asleep', 8, 16384, [0.0], [], state='standby',
          reported_at=rows.ago(days=1))
    _host('silent', 8, 16384, [0.05], [(_vm(3), 2048, 500, 0.1)],
          reported_at=rows.ago(hours=1))

    audit = _plan()

    assert _actions(audit) == [
        (0, 'migrate', _vm(1), 'idle', 'work', 'underload:cpu+memory'),
        (1, 'power_off', None, 'idle', None, 'underload:cpu+memory')]
    assert audit.unplaced is None
    assert [a.state for a in audit.actions] == ['pending', 'pending']


def test_a_partial_plan_says_what_it_left_and_why(rounds):
    # hot: 7.6 of 8 cores; vm 2 (3.6 cores) must leave but no host has
    # 3.6 cores free under 0.8 of its cpu.
    _host('hot', 8, 16384, [0.95, 0.95],
          [(_vm(1), 4096, 2000, 4.0), (_vm(2), 2048, 1500, 3.6)])
    # big is underloaded (0.1 cpu, 0.43 memory), but its 6000 MiB VM fits
    # nowhere else: it is kept.
    _host('big', 4, 16384, [0.1, 0.1],
          [(_vm(3), 8192, 6000, 0.2), (_vm(4), 2048, 1000, 0.2)])
    _host('small', 8, 4096, [0.6, 0.6], [(_vm(5), 2048, 1000, 4.8)])
    # A host that reported no CPUs cannot take part.
    _host('broken', 0, 16384, [0.0], [])

    audit = _plan()

    assert audit.state == 'recommended'
    assert audit.actions == []
    assert set(audit.unplaced) == {'instances', 'hosts'}
    assert list(audit.unplaced['instances']) == [_vm(2)]
    assert 'cpu' in audit.unplaced['instances'][_vm(2)]
    hosts = audit.unplaced['hosts']
    assert sorted(hosts) == ['big', 'broken']
    assert hosts['big'].startswith('VM %s fits on no other active host' %
                                   _vm(3))
    assert 'reported 0 CPUs' in hosts['broken']
    assert audit.reason.endswith('1 VM not placed; 1 underloaded host kept; '
                                 '1 host left out')


def test_booked_memory_sees_the_flavors_not_the_working_sets(rounds):
    # idle's VM uses 1000 MiB but booked 16000: by WSS the host is idle and
    # emptied; by booked memory it is full (0.98 > 0.95) and its VM fits
    # nowhere.
    _host('idle', 8, 16384, [0.1, 0.1], [(_vm(1), 16000, 1000, 0.8)])
    _host('work', 8, 16384, [0.6, 0.6], [(_vm(2), 8192, 8000, 4.8)])

    by_wss = _plan('wss')
    by_booked = _plan('booked')

    assert [a[1] for a in _actions(by_wss)] == ['migrate', 'power_off']
    assert by_booked.memory_basis == 'booked'
    assert by_booked.actions == []
    assert list(by_booked.unplaced['instances']) == [_vm(1)]
    assert by_booked.reason.startswith('1 overloaded host (idle: memory)')


def test_booked_basis_still_selects_by_working_set(rounds):
    # full books 16000 of its 16384 MiB (0.98 > 0.95: memory overload). By
    # booked memory vm 2 is the cheaper to move (4000 < 12000 MiB); by
    # working set, what a live migration copies, vm 1 is (500 < 3000 MiB),
    # the one ALGORITHMS.md §3.3 selects whatever the basis. spare takes
    # vm 1 (1 core of its 1.6 free) but not vm 2 (3.8 cores).
    _host('full', 8, 16384, [0.6, 0.6],
          [(_vm(1), 12000, 500, 1.0), (_vm(2), 4000, 3000, 3.8)])
    _host('spare', 8, 16384, [0.6, 0.6], [(_vm(3), 2048, 1000, 4.8)])

    audit = _plan('booked')

    assert _actions(audit) == [
        (0, 'migrate', _vm(1), 'full', 'spare', 'overload:memory')]
    assert audit.unplaced is None


def test_an_audit_parameters_override_the_options(rounds):
    _host('idle', 8, 16384, [0.1, 0.1], [(_vm(1), 2048, 1000, 0.8)])
    _host('work', 8, 16384, [0.6, 0.6], [(_vm(2), 8192, 8000, 4.8)])

    audit = _plan(parameters={'underload_cpu': 'never'})

    assert audit.actions == []
    assert audit.state == 'recommended'


def test_collect_reads_histories_capacity_and_grants(rounds):
    rounds.config(remote_weight=0.5, history_length=3,
                  group='consolidation')
    _host('h1', 4, 8192, [0.1, 0.2, 0.3, 0.4], [(_vm(1), 4096, 2048, 1.5)],
          reserved_mb=1024)
    (grant,) = rows.insert(models.Grant,
                           dict(consumer_host='h1', granted_mb=2048))
    # Its slab in h1's local tier is not remote memory.
    rows.insert(models.Slab, dict(grant_id=grant, index=0, donor_host='h9',
                                  size_mb=2048, status='active'),
                dict(grant_id=grant, index=1, donor_host='h1', size_mb=512,
                     status='reclaimed'))
    # A VM reported by a 1.0 compute node: no cpu samples.
    db_reports.report_ingest(_ctxt(), dict(name='h2', vcpus=2, memory_mb=4096,
                                           cpu_util=0.25),
                             [dict(uuid=_vm(2), booked_mb=1024, current_mb=900,
                                   cpu_util=0.5, vcpus=2)], [])

    hosts, skipped = audits.collect(_ctxt())

    assert skipped == {}
    h1, h2 = hosts
    # 8192 - 1024 reserved + 2048 granted x 0.5
    assert (h1.cpu_total, h1.mem_usable_mb) == (4.0, 8192.0)
    assert h1.cpu_history == [0.2, 0.3, 0.4]
    assert h1.mem_history == [0.25] * 3
    assert [(vm.uuid, vm.cpu_history, vm.wss_maxavg_mb, vm.booked_mb)
            for vm in h1.vms] == [(_vm(1), [1.5] * 3, 2048.0, 4096.0)]
    # No host sample yet: the host's last report and its VMs' memory.
    assert (h2.cpu_history, h2.mem_history) == ([0.25], [900 / 4096])
    assert h2.vms[0].cpu_history == [1.0]


def test_a_vm_without_a_wss_weighs_what_host_reclaim_left_it(rounds):
    """Host reclaim's paged-out memory lowers what a VM without a WSS
    weighs in a round, as a balloon lowers current_mb; a VM with a WSS
    weighs its WSS max-average whatever it holds paged out."""
    db_reports.report_ingest(_ctxt(), dict(name='h1', vcpus=2, memory_mb=4096,
                                           cpu_util=0.25), [
        dict(uuid=_vm(1), booked_mb=1024, current_mb=1024, reclaimed_mb=600,
             cpu_util=0.5, vcpus=2),
        dict(uuid=_vm(2), booked_mb=1024, current_mb=1024, wss_mb=300,
             wss_maxavg_mb=300, reclaimed_mb=600, cpu_util=0.5, vcpus=2)],
        [])

    (h1,), _ = audits.collect(_ctxt())

    assert [vm.wss_maxavg_mb for vm in h1.vms] == [424.0, 300.0]


def test_no_reporting_host_fails_the_audit_with_the_reason(rounds):
    _host('silent', 8, 16384, [0.05], [], reported_at=rows.ago(hours=1))

    audit = _plan()

    assert audit.state == 'failed'
    assert 'no compute host that can take part reported in the last 60 s' \
        in audit.reason
    assert audit.finished_at is not None


def test_bad_stored_parameters_fail_the_audit_naming_them(rounds):
    _host('work', 8, 16384, [0.6, 0.6], [])

    audit = _plan(parameters={'overload_mem_params': {'threshold': 7}})

    assert audit.state == 'failed'
    assert 'overload.threshold.threshold' in audit.reason


def test_an_audit_already_taken_is_left_alone(rounds):
    audit = db_audits.audit_create(_ctxt(), dict(state='planning'))

    assert audits.run_audit(_ctxt(), audit.uuid) is None
    assert db_audits.audit_get(_ctxt(), audit.uuid).state == 'planning'


def _stored():
    return db_listings.list_resources(_ctxt(), 'audits')


def _messages(caplog, level):
    return [r.getMessage() for r in caplog.records
            if r.name == audits.__name__ and r.levelno >= level]


def test_an_asked_for_audit_with_nothing_to_do_is_stored(rounds):
    _host('work', 8, 16384, [0.6, 0.6], [(_vm(1), 8192, 8000, 4.8)])

    audit = _plan()

    assert (audit.state, audit.actions) == ('recommended', [])
    assert [a.uuid for a in _stored()] == [audit.uuid]


def test_periodic_rounds_with_nothing_to_do_store_no_audit(rounds, caplog):
    caplog.set_level(logging.DEBUG)
    _host('work', 8, 16384, [0.6, 0.6], [(_vm(1), 8192, 8000, 4.8)])
    periodic = audits.PeriodicRounds()

    assert [periodic.run(_ctxt()) for _ in range(3)] == [None] * 3

    assert _stored() == []
    # Said once at info, then at debug.
    assert len([m for m in _messages(caplog, logging.INFO)
                if 'nothing to do' in m]) == 1
    assert len([m for m in _messages(caplog, logging.DEBUG)
                if 'nothing to do' in m]) == 3


def test_a_periodic_round_with_actions_is_stored(rounds):
    rounds.config(auto_execute=True, memory_basis='booked',
                  group='consolidation')
    _host('idle', 8, 16384, [0.1, 0.1], [(_vm(1), 2048, 1000, 0.8)])
    _host('work', 8, 16384, [0.6, 0.6], [(_vm(2), 8192, 8000, 4.8)])
    periodic = audits.PeriodicRounds()

    audit = periodic.run(_ctxt())

    assert [a.uuid for a in _stored()] == [audit.uuid]
    stored = db_audits.audit_get(_ctxt(), audit.uuid)
    assert (stored.state, stored.memory_basis, stored.auto_execute) == (
        'recommended', 'booked', True)
    assert [a[1] for a in _actions(stored)] == ['migrate', 'power_off']


def test_periodic_rounds_failing_alike_store_one_audit(rounds, caplog):
    _host('silent', 8, 16384, [0.05], [], reported_at=rows.ago(hours=1))
    periodic = audits.PeriodicRounds()

    results = [periodic.run(_ctxt()) for _ in range(3)]

    assert results[0].state == 'failed' and results[1:] == [None, None]
    failed = _stored()
    assert [(a.uuid, a.state) for a in failed] == [(results[0].uuid,
                                                    'failed')]
    assert 'no compute host that can take part' in failed[0].reason
    assert failed[0].finished_at is not None
    assert len([m for m in _messages(caplog, logging.WARNING)
                if 'no compute host' in m]) == 1


def test_a_periodic_failure_is_stored_again_once_the_outcome_changed(
        rounds):
    periodic = audits.PeriodicRounds()
    periodic.run(_ctxt())
    # A bad option fails the next round for another reason...
    rounds.config(overload_mem_params='{"threshold": 7}',
                  group='consolidation')
    periodic.run(_ctxt())
    periodic.run(_ctxt())
    # ... and once fixed, the first reason counts as new again.
    rounds.config(overload_mem_params='{}', group='consolidation')
    periodic.run(_ctxt())

    reasons = [a.reason for a in _stored()]
    assert len(reasons) == 3
    assert 'no compute host' in reasons[0]
    assert 'overload.threshold.threshold' in reasons[1]
    assert reasons[2] == reasons[0]


def test_an_asked_for_audit_is_stored_even_failing_as_periodic_ones(
        rounds):
    periodic = audits.PeriodicRounds()
    periodic.run(_ctxt())

    audit = _plan()
    periodic.run(_ctxt())

    assert audit.state == 'failed'
    assert len(_stored()) == 2
