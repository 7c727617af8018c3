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

"""The per-VM weight cache: TTL, resolution order, fallbacks, logging."""
import logging

import pytest

from memagg.compute import qos
from memagg.conf import CONF
from memagg.drivers.compute_api import base
from memagg.drivers.local import base as local_base
from memagg.drivers.local import weighted

VM = 'b5a2c2a4-1f0e-4a55-9d0e-3c4f1b9a0001'
OTHER = 'b5a2c2a4-1f0e-4a55-9d0e-3c4f1b9a0002'


class FakeApi(base.ComputeApi):
    """Answers from ``answers`` (uuid -> QosWeight or exception), counting
    the calls per VM."""

    name = 'fake'

    def __init__(self, answers):
        super().__init__(None)
        self.answers = answers
        self.calls = {}

    def get_qos_weight(self, instance_uuid):
        self.calls[instance_uuid] = self.calls.get(instance_uuid, 0) + 1
        answer = self.answers[instance_uuid]
        if isinstance(answer, Exception):
            raise answer
        return answer


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


@pytest.fixture
def clock():
    return Clock()


def _resolver(conf, clock, answers, ttl=300):
    conf.config(weight_cache_ttl=ttl, group='nova')
    resolver = qos.WeightResolver(CONF, clock=clock)
    resolver.api = FakeApi(answers)
    return resolver


def test_default_driver_is_none_and_knows_no_weight(conf):
    resolver = qos.WeightResolver(CONF)
    assert resolver.api.name == 'none'
    assert resolver.weight(VM) is None


def test_unknown_driver_fails_naming_the_option(conf):
    conf.config(compute_api_driver='nowa', group='compute')
    with pytest.raises(Exception) as err:
        qos.WeightResolver(CONF)
    assert '[compute] compute_api_driver' in str(err.value)
    assert 'nova' in str(err.value) and 'none' in str(err.value)


@pytest.mark.parametrize('extra_specs, image, expected', [
    ({'memagg:weight': 'gold'}, {'memagg:weight': 'bronze'},
     base.QosWeight('gold', base.FLAVOR)),
    ({'hw:cpu_policy': 'dedicated'}, {'memagg:weight': '3.5'},
     base.QosWeight('3.5', base.IMAGE)),
    ({'memagg:weight': '  '}, {'memagg:weight': 'silver'},
     base.QosWeight('silver', base.IMAGE)),
    ({}, None, base.NO_WEIGHT),
    (None, {}, base.NO_WEIGHT),
])
def test_flavor_extra_spec_wins_over_image_property(
        extra_specs, image, expected):
    assert base.pick_weight(extra_specs, image) == expected


def test_weight_is_cached_until_the_ttl(conf, clock):
    resolver = _resolver(conf, clock, {VM: base.QosWeight('gold',
                                                          base.FLAVOR)})
    assert resolver.weight(VM) == 'gold'
    clock.now += 299
    assert resolver.weight(VM) == 'gold'
    assert resolver.api.calls[VM] == 1
    resolver.api.answers[VM] = base.QosWeight('bronze', base.FLAVOR)
    clock.now += 1
    assert resolver.weight(VM) == 'bronze'
    assert resolver.api.calls[VM] == 2


def test_cache_is_per_vm_and_forgotten(conf, clock):
    resolver = _resolver(conf, clock, {
        VM: base.QosWeight('gold', base.FLAVOR),
        OTHER: base.QosWeight('2', base.IMAGE)})
    assert (resolver.weight(VM), resolver.weight(OTHER)) == ('gold', '2')
    resolver.forget(VM)
    assert resolver.weight(VM) == 'gold'
    assert resolver.api.calls == {VM: 2, OTHER: 1}


def test_unknown_vm_gets_default_logged_once_and_retried_after_ttl(
        conf, clock, caplog):
    resolver = _resolver(conf, clock, {VM: base.InstanceNotFound(
        'Nova has no server %s' % VM)})
    with caplog.at_level(logging.WARNING, logger='memagg.compute.qos'):
        for _ in range(3):
            assert resolver.weight(VM) is None
            clock.now += 300
    assert resolver.api.calls[VM] == 3
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and VM in warnings[0].getMessage()
    resolver.api.answers[VM] = base.QosWeight('silver', base.FLAVOR)
    assert resolver.weight(VM) == 'silver'


def test_nova_down_gives_default_then_retries_after_ttl(conf, clock, caplog):
    down = base.ComputeApiUnavailable('Nova: connection refused')
    resolver = _resolver(conf, clock, {VM: down, OTHER: down})
    with caplog.at_level(logging.WARNING, logger='memagg.compute.qos'):
        assert resolver.weight(VM) is None
        # Nova is not asked again for any VM before the TTL.
        assert resolver.weight(OTHER) is None
        clock.now += 299
        assert resolver.weight(VM) is None
        assert resolver.api.calls == {VM: 1}
        clock.now += 1
        assert resolver.weight(VM) is None
    assert resolver.api.calls == {VM: 2}
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert 'connection refused' in warnings[0].getMessage()

    resolver.api.answers[VM] = base.QosWeight('gold', base.FLAVOR)
    clock.now += 300
    assert resolver.weight(VM) == 'gold'


def test_nova_down_keeps_the_weight_last_read(conf, clock):
    resolver = _resolver(conf, clock, {VM: base.QosWeight('gold',
                                                          base.FLAVOR)})
    assert resolver.weight(VM) == 'gold'
    resolver.api.answers[VM] = base.ComputeApiUnavailable('Nova: 503')
    clock.now += 300
    assert resolver.weight(VM) == 'gold'
    clock.now += 100
    assert resolver.weight(VM) == 'gold'
    assert resolver.api.calls[VM] == 2


@pytest.mark.parametrize('value, expected', [
    ('gold', 4.0), ('Silver', 2.0), ('bronze', 1.0), ('3', 3.0),
    (None, 1.0), ('platinum', 1.0)])
def test_class_names_map_to_the_policy_weights(
        conf, clock, value, expected):
    answer = base.QosWeight(value, base.FLAVOR if value else None)
    resolver = _resolver(conf, clock, {VM: answer})
    policy = weighted.WeightedPolicy(local_base.params_from_conf(CONF))
    vm = local_base.VmMemory(uuid=VM, m_init_mb=1024, m_cur_mb=1024,
                             wss_mb=512, wss_maxavg_mb=512, max_mb=1024,
                             weight=resolver.weight(VM))
    assert policy.weight_of(vm) == expected
