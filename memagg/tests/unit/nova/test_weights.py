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

"""RealMemoryWeigher run by Nova's own weight handler on Nova's
HostStates, against memagg's real API: the order by real free memory, the
multiplier, and hosts memagg cannot vouch for."""
from nova import objects
from nova.scheduler import weights as nova_weights

from memagg.nova import weights
from memagg.tests.functional import service_procs
from memagg.tests.unit.nova import cluster

# Three hosts with the same booked memory (two VMs of 4,096 MiB) whose VMs
# keep different amounts in RAM.
WSS = {'a': 3000, 'b': 500, 'c': 1800}


def _hosts(*extra):
    for name, wss in WSS.items():
        cluster.report(name, [(4096, wss)] * 2)
    return [cluster.host_state(name, 2 * 4096) for name in list(WSS) + list(
        extra)]


def _free(name):
    return cluster.HOST_MB - cluster.RESERVED_MB - 2 * WSS[name]


def _weigh(weigher, hosts, spec):
    """(host, weight) best first, as Nova's weight handler orders them."""
    weighed = nova_weights.HostWeightHandler().get_weighed_objects(
        [weigher], hosts, spec)
    return [(w.obj.host, w.weight) for w in weighed]


def _normalized(name):
    """Nova's normalization of ``name``'s weight among WSS's hosts."""
    return (_free(name) - _free('a')) / (_free('b') - _free('a'))


def test_raw_weight_is_real_free_memory(memagg_options):
    hosts = _hosts()
    weighed = [nova_weights.WeighedHost(host, 0.0) for host in hosts]

    assert weights.RealMemoryWeigher().weigh_objects(
        weighed, cluster.request(1024)) == [_free(n) for n in WSS]


def test_the_most_real_free_memory_wins(memagg_options):
    order = _weigh(weights.RealMemoryWeigher(), _hosts(),
                   cluster.request(1024))

    assert order == [('b', 1.0), ('c', _normalized('c')), ('a', 0.0)]


def test_the_multiplier_is_an_option(memagg_options):
    memagg_options(weight_multiplier=-2.0)

    order = _weigh(weights.RealMemoryWeigher(), _hosts(),
                   cluster.request(1024))

    # Negative stacks: the least free host first.
    assert order == [('a', 0.0), ('c', -2.0 * _normalized('c')),
                     ('b', -2.0)]


def test_aggregate_metadata_overrides_the_multiplier(memagg_options):
    weigher = weights.RealMemoryWeigher()
    host = cluster.host_state('a')

    assert weigher.weight_multiplier(host) == 1.0
    host.aggregates = [objects.Aggregate(
        id=1, name='stack', hosts=['a'],
        metadata={'memagg_weight_multiplier': '-3.5'})]
    assert weigher.weight_multiplier(host) == -3.5


def test_hosts_memagg_cannot_vouch_for_rank_with_the_least_free(
        memagg_options, warnings_logged):
    hosts = _hosts('stranger')
    weighed = [nova_weights.WeighedHost(host, 0.0) for host in hosts]

    raw = weights.RealMemoryWeigher().weigh_objects(
        weighed, cluster.request(1024))

    assert raw == [_free('a'), _free('b'), _free('c'), _free('a')]
    assert warnings_logged() == [
        'memagg cannot vouch for 1 host(s): stranger (unknown to memagg); '
        'RealMemoryWeigher ranks them with the least free host']


def test_memagg_failing_weighs_every_host_the_same(memagg_options):
    memagg_options(endpoint_override='http://127.0.0.1:%d'
                   % service_procs.free_port())
    hosts = [cluster.host_state(name) for name in WSS]
    weighed = [nova_weights.WeighedHost(host, 0.0) for host in hosts]

    assert weights.RealMemoryWeigher().weigh_objects(
        weighed, cluster.request(1024)) == [0.0, 0.0, 0.0]
