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

"""memagg-compute's remote memory controller (memagg/compute/remote.py):
the swap ghost fed into the estimators, the period's plan acted on, the
requests to memagg-scheduler with their back-off, recovery and the VMs
gone or paused. Its exports (remote_exports.py, the endpoints
memagg-scheduler calls) are test_remote_exports.py's, the plan on
hand-made periods test_remote_plan.py's; the fakes are in
remote_fixtures.py.
"""
import logging
import os

import pytest

from memagg.common import exceptions
from memagg.compute import collector as collector_mod
from memagg.compute import memory as memory_mod
from memagg.compute import remote
from memagg.compute import remote_grants
from memagg.compute import swapd
from memagg.tests.unit.compute.remote_fixtures import (dom, donor, Driver,
                                                       FakeScheduler,
                                                       FakeSwapd, GRANT,
                                                       grant_dict, LEDGER, MIB,
                                                       period, result, SECRET,
                                                       VM, VM2)


def test_ghost_events_feed_the_vms_tracker(lmc):
    lmc.client.exports[GRANT] = {'local': remote_grants.local_copy_path(
        '/s', VM, GRANT)}
    lmc.client.events[GRANT] = [('o', 1), ('o', 2), ('o', 3), ('i', 1),
                                ('i', 9)]
    ghosts = lmc.ghost_periods([dom(VM), dom(VM2)])
    assert list(ghosts) == [VM]
    ghost = ghosts[VM]
    assert (ghost.swap_outs, ghost.swap_ins, ghost.unmatched_swap_ins) == (
        3, 1, 1)
    # Page 1 had 2 pages evicted after it: distance 3, in the first bucket.
    assert ghost.distance_pages == 1024
    # The queue stays across periods: page 2 swapped in next period.
    lmc.client.events[GRANT] = [('i', 2)]
    assert lmc.ghost_periods([dom(VM)])[VM].swap_ins == 1


def test_swapd_down_leaves_the_estimators_without_ghost_logged_once(
        lmc, caplog):
    lmc.client.down = True
    with caplog.at_level(logging.WARNING, logger='memagg.compute.remote'):
        assert lmc.ghost_periods([dom(VM)]) == {}
        assert lmc.ghost_periods([dom(VM)]) == {}
        lmc.plan_period(period(3000), [dom(VM)])
    warnings = [r for r in caplog.records if 'does not answer' in
                r.getMessage()]
    assert len(warnings) == 1
    assert lmc.lendable_mb == 0


def test_recover_finds_exports_and_their_vms_without_dropping_any(lmc):
    lmc.client.exports = {
        GRANT: {'local': remote_grants.local_copy_path('/s', VM, GRANT)},
        VM2: {'local': '/elsewhere/x.img'}}
    lmc.client.down = True
    lmc.recover()
    assert lmc.grants_by_instance() == {}
    lmc.client.down = False
    # Recovered on the next period once memagg-swapd answers.
    lmc.ghost_periods([dom(VM)])
    assert lmc.grants_by_instance()[VM].uuid == GRANT
    assert not [c for c in lmc.client.calls if c[0] == 'export_drop']


def test_the_report_carries_each_exported_grants_ledger(lmc):
    other = '9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a'
    lmc.client.exports = {uuid: {
        'local': remote_grants.local_copy_path('/s', vm, uuid),
        'sealed': True, 'key_pending': False}
        for uuid, vm in ((GRANT, VM), (other, VM2))}
    # Nothing before memagg-swapd has answered once.
    lmc.client.down = True
    assert lmc.ledgers() == []
    lmc.client.down = False
    lmc.recover()
    # The second export went away since: its grant has no ledger.
    del lmc.client.exports[other]
    [ledger] = lmc.ledgers()
    assert ledger.as_dict() == dict(LEDGER, grant_uuid=GRANT)
    lmc.client.down = True
    assert lmc.ledgers() == []


def test_a_short_vm_gets_a_grant_asked_once_and_retried_with_backoff(
        lmc, clock):
    lmc.scheduler_api.fail['allocate_remote'] = exceptions.RPCTimeout(
        target='memagg-scheduler', method='allocate_remote', timeout=33)
    short = period(0, result(VM, 1500, 1200))
    lmc.plan_period(short, [dom(VM)])
    lmc.act(None)
    assert lmc.scheduler_api.calls == [
        ('allocate_remote', VM, 'node-a', 1024, 33)]
    # The next periods come before the retry is due: no hot loop.
    for _ in range(3):
        lmc.plan_period(short, [dom(VM)])
        lmc.act(None)
    assert len(lmc.scheduler_api.calls) == 1
    clock[0] += 60
    del lmc.scheduler_api.fail['allocate_remote']
    lmc.plan_period(short, [dom(VM)])
    lmc.act(None)
    assert len(lmc.scheduler_api.calls) == 2
    # Now it has a grant: nothing more is asked.
    lmc.plan_period(short, [dom(VM)])
    lmc.act(None)
    assert len(lmc.scheduler_api.calls) == 2


def test_excess_lent_memory_is_reclaimed(lmc):
    lmc.client.stats = donor(used_mb=512)
    lmc.plan_period(period(1024 + 100), [])
    lmc.act(None)
    assert lmc.scheduler_api.calls == [('reclaim', 'node-a', 412, 33)]


def test_a_gone_vm_is_released_and_its_export_dropped_after_two_periods(
        lmc):
    lmc.attach_grant(grant_dict())
    lmc.plan_period(period(0), [])
    lmc.act(None)
    assert lmc.scheduler_api.calls == []
    lmc.plan_period(period(0), [])
    lmc.act(None)
    assert lmc.scheduler_api.calls == [('release_grant', GRANT, 33)]
    assert ('export_drop', GRANT, True) in lmc.client.calls
    assert lmc.driver.detached == [(VM, 'memagg-swap-0b4f7e0c')]
    assert lmc.grants_by_instance() == {}


def test_a_gone_vm_whose_grant_moved_drops_its_export_only(lmc):
    lmc.attach_grant(grant_dict())
    lmc.scheduler_api.moved[GRANT] = 'node-b'
    for _ in range(2):
        lmc.plan_period(period(0), [])
        lmc.act(None)
    assert lmc.scheduler_api.release_hosts == ['node-a']
    assert ('export_drop', GRANT, True) in lmc.client.calls
    # The VM's definition is on its new host: nothing to detach here.
    assert lmc.driver.detached == []
    assert lmc.grants_by_instance() == {}


def test_a_vm_missing_for_one_period_keeps_its_grant(lmc):
    lmc.attach_grant(grant_dict())
    lmc.plan_period(period(0), [])
    lmc.plan_period(period(0), [dom(VM)])
    lmc.plan_period(period(0), [])
    assert lmc.plan.release == []


def test_release_of_a_grant_the_scheduler_does_not_know_still_drops(lmc):
    lmc.attach_grant(grant_dict())
    lmc.scheduler_api.fail['release_grant'] = exceptions.NotFound(
        resource='grant', id=GRANT)
    for _ in range(2):
        lmc.plan_period(period(0), [])
    lmc.act(None)
    assert ('export_drop', GRANT, True) in lmc.client.calls


def test_a_failed_release_keeps_the_export_for_a_later_try(lmc, clock):
    lmc.attach_grant(grant_dict())
    lmc.scheduler_api.fail['release_grant'] = exceptions.ServiceUnavailable(
        reason='bus down')
    for _ in range(2):
        lmc.plan_period(period(0), [])
    lmc.act(None)
    assert GRANT in lmc.client.exports
    del lmc.scheduler_api.fail['release_grant']
    clock[0] += 60
    lmc.plan_period(period(0), [])
    lmc.act(None)
    assert GRANT not in lmc.client.exports


def test_a_vm_paused_on_its_swap_disk_is_resumed_once_its_export_is_served(
        lmc):
    lmc.attach_grant(grant_dict())
    lmc.plan_period(period(0), [dom(VM)])
    lmc.driver.paused.add(VM)
    lmc.act(None)
    assert lmc.driver.resumed == [(VM, ['memagg-swap-0b4f7e0c'])]
    # memagg-swapd away, or back without the export: nothing to resume.
    lmc.client.down = True
    lmc.plan_period(period(0), [dom(VM)])
    lmc.act(None)
    lmc.client.down = False
    lmc.client.exports.clear()
    lmc.plan_period(period(0), [dom(VM)])
    lmc.act(None)
    assert lmc.driver.resumed == [(VM, ['memagg-swap-0b4f7e0c'])]
    assert ('export_list',) in lmc.client.calls[-3:]


def test_resume_paused_alone_finds_memagg_swapd_back(lmc):
    """A CI rehearsal's VM stayed paused for good: resume_paused, called
    alone while memagg-swapd restarted, saw it down, and skipped every
    later call until another step of the period asked memagg-swapd."""
    lmc.attach_grant(grant_dict())
    lmc.driver.paused.add(VM)
    lmc.client.down = True
    lmc.resume_paused()
    lmc.client.down = False
    lmc.resume_paused()
    assert lmc.driver.resumed == [(VM, ['memagg-swap-0b4f7e0c'])]
    assert not lmc._swapd_down


def test_disabled_host_lends_nothing_and_refuses_slabs(lmc, conf):
    conf.config(enabled=False, group='swapd')
    assert lmc.ghost_periods([dom(VM)]) == {}
    assert lmc.plan_period(period(5000), []) == 0
    with pytest.raises(exceptions.ServiceUnavailable) as info:
        lmc.prepare_slabs(GRANT, SECRET, 64, [0])
    assert 'enabled' in str(info.value)
    assert lmc.client.calls == []


def test_the_ghost_reaches_the_estimator_and_lendable_the_report(
        lmc, conf, monkeypatch):
    os.makedirs(os.path.join(conf.conf.swapd.state_dir, 'local'),
                exist_ok=True)
    # The machine's free space is other tests' to change: 10 GiB here.
    monkeypatch.setattr(remote_grants.os, 'statvfs', lambda path: (
        os.statvfs_result((4096, 4096, 0, 0, 10240 * 256, 0, 0, 0, 0, 255))))
    conf.config(estimator='swap_ghost', group='wss')
    conf.config(reserved_host_memory_mb=0, group='compute')
    stats = {'actual': 1024 * 1024, 'available': 1024 * 1024,
             'usable': 512 * 1024}
    lmc.driver.domains[VM] = dom(VM, booked=1024, stats=stats)
    lmc.attach_grant(grant_dict())
    # 300 pages evicted, then the oldest swapped back in: D = 300 pages,
    # within the first 4 MiB bucket.
    lmc.client.events[GRANT] = ([('o', p) for p in range(300)]
                                + [('i', 0)])
    lmc.client.stats = donor(capacity_mb=100000)
    memory = memory_mod.MemoryManager(lmc.driver, conf.conf)
    collector = collector_mod.Collector(lmc.driver, 'node-a', memory, lmc)
    report = collector.run_period()
    [instance] = report.instances
    assert instance.wss_mb == 1024 + 4
    assert instance.estimator.startswith('swap_ghost')
    # The VM is short (WSS above its maximum): nothing lendable.
    assert report.lendable_mb == 0
    assert [ledger.grant_uuid for ledger in report.ledgers] == [GRANT]
    # The room for new grants' copies: the state directory's filesystem
    # (10 GiB free, as statvfs says below) less the reserve and the
    # grant's copy, 128 MiB not written yet.
    assert report.local_room_mb == 10240 - 1024 - 128
    # The copy's device failed under a write: no room while it is stale.
    lmc.client.exports[GRANT]['stale_slabs'] = [1]
    assert collector.run_period().local_room_mb == 0
    del lmc.client.exports[GRANT]['stale_slabs']
    assert collector.run_period().local_room_mb == 10240 - 1024 - 128
    # No tier plan yet: no L1 share to report.
    assert instance.l1_share_mb is None
    lmc.tiers.shares_mb = {VM: 320}
    [instance] = collector.run_period().instances
    assert instance.l1_share_mb == 320
    assert lmc.plan.allocate == []      # it has a grant already


def test_no_donor_stats_still_lets_a_short_vm_ask_but_not_without_swapd(
        lmc):
    short = period(0, result(VM, 1500, 1200))
    lmc.client.errors['donor_stats'] = swapd.SwapdError('ENODEV', 'verb')
    lmc.plan_period(short, [dom(VM)])
    assert lmc.plan.allocate == [(VM, 1024)] and lmc.lendable_mb == 0
    lmc.client.down = True
    lmc.plan_period(short, [dom(VM)])
    assert lmc.plan.allocate == []


def test_the_fixed_plug_in_is_the_default(lmc):
    assert lmc.remote_budget.name == 'fixed'


def test_a_bad_remote_budget_fails_at_start_naming_the_option(conf, lmc):
    conf.config(remote_budget='tcp', group='reservoir')
    with pytest.raises(exceptions.InvalidParameter) as info:
        remote.RemoteMemory(Driver(), 'node-a', conf.conf, FakeScheduler(),
                            client=FakeSwapd())
    assert info.value.kwargs['field'] == '[reservoir] remote_budget'


def test_tlp_limits_follow_swap_ins_and_slack_over_periods(tlp_lmc):
    lmc = tlp_lmc
    short = period(0, result(VM, 1500, 1200))
    calm = period(0, result(VM, 900, 1000, shortage=False))
    # Period 1: short, nothing held, budget 1024 (its cap): 0 + 20.48 ->
    # 20, asked for; the grant of 20 MiB is held from then on.
    lmc.ghost_periods([dom(VM)])
    lmc.plan_period(short, [dom(VM)])
    lmc.act(None)
    assert lmc.scheduler_api.calls == [('allocate_remote', VM, 'node-a', 20,
                                        33)]
    # Period 2: not short, but its export served swap-ins (one matched,
    # one never seen evicted): 20 + 20.48 -> 40. Not short: nothing asked.
    lmc.client.events[GRANT] = [('o', 1), ('i', 1), ('i', 7)]
    lmc.ghost_periods([dom(VM)])
    lmc.plan_period(calm, [dom(VM)])
    lmc.act(None)
    assert lmc.plan.limits == {VM: 40}
    assert len(lmc.scheduler_api.calls) == 1
    # Period 3: no swap-ins; slack 40 - 20 = 20 above 0.25 x 40 = 10:
    # 40 - 0.8 -> 39.
    lmc.ghost_periods([dom(VM)])
    lmc.plan_period(calm, [dom(VM)])
    assert lmc.plan.limits == {VM: 39}
    # Period 4: short again: 39 + 20.48 -> 59; it holds 20, asks for 39.
    lmc.ghost_periods([dom(VM)])
    lmc.plan_period(short, [dom(VM)])
    lmc.act(None)
    assert lmc.scheduler_api.calls[-1] == ('allocate_remote', VM, 'node-a',
                                           39, 33)
    # Gone: its limit is forgotten.
    lmc.plan_period(period(0), [])
    assert lmc.plan.limits == {}


def test_what_a_vm_holds_follows_attach_reclaim_and_recovery(tlp_lmc):
    lmc = tlp_lmc
    calm = period(0, result(VM, 900, 1000, shortage=False))
    # Two slabs of 64 MiB on donors: new to the policy, its limit is its
    # use, 128.
    lmc.attach_grant(grant_dict())
    lmc.plan_period(calm, [dom(VM)])
    assert lmc.plan.limits == {VM: 128}
    # Both slabs reclaimed to the local copy: none on donors, but still
    # the VM's, in the local tier, as its cap counts them: no slack.
    lmc.reclaim_slabs(GRANT, [0, 1])
    assert lmc.grants_by_instance()[VM].remote_mb == 0
    lmc.plan_period(calm, [dom(VM)])
    assert lmc.plan.limits == {VM: 128}
    # Released: it holds nothing; slack 128 above 32: 128 - 2.56 -> 125.
    lmc.drop_export(GRANT)
    lmc.plan_period(calm, [dom(VM)])
    assert lmc.plan.limits == {VM: 125}
    # A restarted memagg-compute finds the grant's slabs in its export:
    # slab 1 of 0-2 is served locally, two on donors: 128 MiB there, 192
    # in all.
    lmc.client.exports = {GRANT: {
        'local': remote_grants.local_copy_path('/s', VM, GRANT),
        'slab_size': 64 * MIB, 'size': 192 * MIB,
        'slabs': [{'index': i} for i in range(3)], 'local_slabs': [1]}}
    restarted = remote.RemoteMemory(Driver(), 'node-a', lmc.conf,
                                    FakeScheduler(), client=lmc.client)
    restarted.recover()
    assert restarted.grants_by_instance()[VM].remote_mb == 128
    restarted.plan_period(calm, [dom(VM)])
    assert restarted.plan.limits == {VM: 192}
