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

"""RealMemoryFilter run by Nova's own filter handler on Nova's HostStates,
against memagg's real API: the formula (working sets, unreported VMs,
borrowable remote memory), the expected working set (extra spec or
ratio), and hosts memagg cannot vouch for under on_failure open and
closed."""
from nova.scheduler import filters as nova_filters
import pytest

from memagg.db.sqlalchemy import models
from memagg.nova import filters
from memagg.tests.unit.db import rows
from memagg.tests.unit.nova import cluster

# 'busy' runs three VMs of 4,096 MiB that keep 3,500 MiB each in RAM: its
# real free memory is 16,384 - 512 - 10,500 = 5,372 MiB, while Nova's
# booked free memory is 16,384 - 512 - 12,288 = 3,584 MiB.
BUSY_VMS = [(4096, 3500)] * 3
BUSY_FREE_MB = cluster.HOST_MB - cluster.RESERVED_MB - 3 * 3500
BUSY_BOOKED_MB = 3 * 4096


def _passing(spec, *hosts):
    """The names of ``hosts`` that a new RealMemoryFilter passes, through
    Nova's filter handler as nova-scheduler runs it."""
    passed = nova_filters.HostFilterHandler().get_filtered_objects(
        [filters.RealMemoryFilter()], hosts, spec)
    return [host.host for host in passed]


@pytest.mark.parametrize('flavor_mb, passes', [
    (8192, True),               # expects 4,096 MiB: booked memory says no
    (2 * BUSY_FREE_MB, True),   # expects exactly what is free
    (2 * BUSY_FREE_MB + 2, False),
])
def test_real_free_memory_against_the_ratio_of_the_flavor(
        memagg_options, flavor_mb, passes):
    cluster.report('busy', BUSY_VMS)

    assert _passing(cluster.request(flavor_mb),
                    cluster.host_state('busy', BUSY_BOOKED_MB)) == (
        ['busy'] if passes else [])


def test_the_ratio_is_an_option(memagg_options):
    cluster.report('busy', BUSY_VMS)
    memagg_options(expected_wss_ratio=0.25)

    # 0.25 x 20,000 = 5,000 MiB fit in 5,372.
    assert _passing(cluster.request(20000),
                    cluster.host_state('busy', BUSY_BOOKED_MB)) == ['busy']


@pytest.mark.parametrize('expected_wss_mb, passes', [
    ('5372', True), ('5373', False), (' 1024 ', True)])
def test_the_extra_spec_overrides_the_ratio(memagg_options, expected_wss_mb,
                                            passes):
    cluster.report('busy', BUSY_VMS)

    # The ratio would expect 1,024 MiB of this 2,048 MiB flavor.
    spec = cluster.request(2048, expected_wss_mb=expected_wss_mb)
    assert _passing(spec, cluster.host_state('busy', BUSY_BOOKED_MB)) == (
        ['busy'] if passes else [])


@pytest.mark.parametrize('bad', ['lots', '0', '-512', '1.5', ''])
def test_a_malformed_extra_spec_is_logged_and_the_ratio_used(
        memagg_options, warnings_logged, bad):
    cluster.report('busy', BUSY_VMS)
    # The ratio expects 5,372 MiB: the host passes; 5,374 and it does not.
    fits = cluster.request(2 * BUSY_FREE_MB, expected_wss_mb=bad)
    busy = cluster.host_state('busy', BUSY_BOOKED_MB)
    flt = filters.RealMemoryFilter()

    assert flt.filter_all([busy], fits) == [busy]
    assert flt.filter_all(
        [busy], cluster.request(2 * BUSY_FREE_MB + 4,
                                expected_wss_mb=bad)) == []
    assert flt.filter_all([busy], fits) == [busy]

    # Once per flavor and answer of memagg, with the way out.
    assert warnings_logged() == [
        'Flavor m%d: extra spec memagg:expected_wss_mb = %r is not a '
        'positive whole number of MiB; using [memagg] expected_wss_ratio '
        '(0.5) of its %d MiB. Fix the flavor with: openstack flavor set '
        '--property memagg:expected_wss_mb=<MiB> m%d'
        % (mb, bad, mb, mb) for mb in (2 * BUSY_FREE_MB,
                                       2 * BUSY_FREE_MB + 4)]


def test_memory_nova_placed_since_the_last_report_counts_in_full(
        memagg_options):
    # memagg-compute reported one VM; Nova has placed two more of 4,096 MiB
    # since: they count at their booked size, having no working set yet.
    cluster.report('fresh', [(4096, 1000)])
    reported = cluster.host_state('fresh', booked_mb=4096)
    placed = cluster.host_state('fresh', booked_mb=3 * 4096)
    spec = cluster.request(2048, expected_wss_mb='7000')

    # 16,384 - 512 - 1,000 = 14,872 MiB, less 8,192 = 6,680.
    assert _passing(spec, reported) == ['fresh']
    assert _passing(spec, placed) == []
    assert _passing(cluster.request(2048, expected_wss_mb='6680'),
                    placed) == ['fresh']


def test_instances_of_one_request_see_the_ones_placed_before(
        memagg_options, host_usage_calls):
    cluster.report('fresh', [(4096, 1000)])
    host = cluster.host_state('fresh', booked_mb=4096)
    # Two VMs of 8,192 MiB, each expected to use 6,144 MiB; 14,872 MiB
    # are free for the first.
    spec = cluster.request(8192, expected_wss_mb='6144', num_instances=2)
    flt = filters.RealMemoryFilter()

    assert flt.filter_all([host], spec) == [host]
    # What nova-scheduler does once the first instance has its host.
    host.consume_from_request(spec)
    # 14,872 - 8,192 = 6,680 MiB are left for the second.
    assert flt.filter_all([host], spec) == [host]
    host.consume_from_request(spec)
    # 14,872 - 16,384 < 6,144 for a third.
    assert flt.filter_all([host], spec) == []
    assert host_usage_calls() == 1


def test_a_share_of_the_reservoir_counts_as_free(memagg_options, make_client):
    cluster.report('busy', BUSY_VMS)
    cluster.report('donor', lendable_mb=4000)
    reservoir_mb = make_client().host_usages.list()['reservoir_free_mb']
    spec = cluster.request(2048, expected_wss_mb=str(BUSY_FREE_MB + 1000))
    busy = cluster.host_state('busy', BUSY_BOOKED_MB)
    assert reservoir_mb >= 4000

    assert _passing(spec, busy) == []
    # A quarter of the reservoir is at least 1,000 MiB.
    memagg_options(remote_share=0.25)
    assert _passing(spec, busy) == ['busy']


@pytest.mark.parametrize('on_failure, passed, effect', [
    ('open', ['old', 'never', 'stranger'], 'passes them'),
    ('closed', [], 'refuses them')])
def test_hosts_memagg_cannot_vouch_for(memagg_options, warnings_logged,
                                       frozen_clock, on_failure, passed,
                                       effect):
    cluster.report('old', reported_at=rows.ago(seconds=300))
    rows.insert(models.Host, dict(name='never', memory_mb=cluster.HOST_MB))
    memagg_options(on_failure=on_failure)
    flt = filters.RealMemoryFilter()
    hosts = [cluster.host_state(name)
             for name in ('old', 'never', 'stranger')]

    assert [h.host for h in flt.filter_all(hosts, cluster.request(1024))] \
        == passed
    assert [h.host for h in flt.filter_all(hosts, cluster.request(2048))] \
        == passed

    # Once per answer of memagg (cache_ttl), not per request.
    assert warnings_logged() == [
        'memagg cannot vouch for 3 host(s): old (last reported 300 s ago, '
        'more than [memagg] stale_after), never (not reported by '
        'memagg-compute yet), stranger (unknown to memagg); '
        'RealMemoryFilter %s ([memagg] on_failure = %s)'
        % (effect, on_failure)]


def test_stale_after_is_an_option(memagg_options):
    cluster.report('old', BUSY_VMS, reported_at=rows.ago(seconds=300))
    memagg_options(stale_after=600, on_failure='closed')
    old = cluster.host_state('old', BUSY_BOOKED_MB)

    assert _passing(cluster.request(2 * BUSY_FREE_MB), old) == ['old']
    assert _passing(cluster.request(2 * BUSY_FREE_MB + 2), old) == []


def test_a_rebuild_is_not_checked(memagg_options, host_usage_calls):
    # A rebuild keeps its host and flavor; Nova's own memory filters skip
    # it too.
    memagg_options(on_failure='closed')
    host = cluster.host_state('stranger')

    assert _passing(cluster.request(1024, rebuild=True), host) == [
        'stranger']
    assert host_usage_calls() == 0


def test_host_passes_is_filter_all_for_one_host(memagg_options):
    cluster.report('busy', BUSY_VMS)
    flt = filters.RealMemoryFilter()
    busy = cluster.host_state('busy', BUSY_BOOKED_MB)

    assert flt.host_passes(busy, cluster.request(2 * BUSY_FREE_MB))
    assert not flt.host_passes(busy, cluster.request(2 * BUSY_FREE_MB + 2))
