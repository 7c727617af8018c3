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

"""nova.conf's [memagg]: a wrong value stops the filter and the weigher
when Nova makes them (at nova-scheduler's start) with an error naming the
option; the group registers twice harmlessly, lists every option for the
sample, and never loads memagg's own configuration into Nova."""
import subprocess
import sys

import nova.conf
from oslo_config import cfg
import pytest

from memagg.common import exceptions
from memagg.nova import conf as memagg_conf
from memagg.nova import filters
from memagg.nova import weights

CLASSES = [filters.RealMemoryFilter, weights.RealMemoryWeigher]


@pytest.fixture
def options(nova_conf):
    """Set Nova's [memagg] options, starting from a valid set; nothing is
    called when Nova makes the filter and the weigher, so no API
    answers."""
    def set_options(**values):
        nova_conf.config(group='memagg', **values)

    set_options(auth_type='none', endpoint_override='http://192.0.2.1:9')
    return set_options


@pytest.mark.parametrize('cls', CLASSES)
@pytest.mark.parametrize('option, value, reason', [
    ('cache_ttl', '-1', 'Should be greater than or equal to 0'),
    ('on_failure', 'shut', "Valid values are [open, closed], but found "
                           "'shut'"),
    ('stale_after', '0', 'Should be greater than or equal to 1'),
    ('expected_wss_ratio', '1.5', 'Should be less than or equal to 1'),
    ('expected_wss_ratio', 'half',
     "could not convert string to float: 'half'"),
    ('remote_share', '-0.1', 'Should be greater than or equal to 0'),
    ('weight_multiplier', 'heavy',
     "could not convert string to float: 'heavy'"),
    ('timeout', 'soon', "could not convert string to float: 'soon'"),
])
def test_a_value_oslo_config_refuses_stops_the_start(
        options, nova_conf, cls, option, value, reason):
    nova_conf.load_raw_values(group='memagg', **{option: value})

    with pytest.raises(exceptions.InvalidParameter) as caught:
        cls()

    message = str(caught.value)
    assert message.startswith("Invalid value for '[memagg] %s': Value for "
                              "option %s from " % (option, option))
    assert message.endswith(reason)


@pytest.mark.parametrize('cls', CLASSES)
@pytest.mark.parametrize('values, message', [
    (dict(expected_wss_ratio=0.0),
     "Invalid value for '[memagg] expected_wss_ratio': must be greater than "
     "0 (and at most 1), not 0.0"),
    (dict(service_type='compute'),
     "Invalid value for '[memagg] service_type': memagg's client calls the "
     "memory-aggregation service only; leave it unset (memory-aggregation), "
     "or give the URL in endpoint_override"),
    (dict(valid_interfaces=['private']),
     "Invalid value for '[memagg]': 'private' is not a valid value for "
     "valid_interfaces. Valid values are public, internal or admin"),
    (dict(auth_type=None),
     "Invalid value for '[memagg] auth_type': nova-scheduler calls memagg's "
     "API with it: set a keystoneauth1 plug-in, e.g. password (with "
     "auth_url, username, password, project_name and their domains) to "
     "find memagg in the catalog, or none with endpoint_override for a "
     "memagg API without Keystone"),
    (dict(auth_type='pasword'),
     "Invalid value for '[memagg] auth_type': The plugin pasword could not "
     "be found; use a keystoneauth1 plug-in name such as password"),
    (dict(auth_type='password'),
     "Invalid value for '[memagg] auth_url': required by auth_type "
     "password; set it"),
])
def test_a_wrong_combination_stops_the_start(options, cls, values,
                                             message):
    options(**values)

    with pytest.raises(exceptions.InvalidParameter) as caught:
        cls()

    assert str(caught.value) == message


def test_registering_twice_is_harmless():
    conf = cfg.ConfigOpts()
    memagg_conf.register_opts(conf)
    memagg_conf.register_opts(conf)

    assert conf.memagg.service_type == 'memory-aggregation'
    assert conf.memagg.timeout == 5
    assert conf.memagg.cache_ttl == 10


def test_the_sample_lists_every_option_of_the_group():
    conf = cfg.ConfigOpts()
    memagg_conf.register_opts(conf)
    [(group, listed)] = memagg_conf.list_opts()

    assert group.name == 'memagg'
    listed = {opt.dest for opt in listed}
    # Every registered option, and the password plug-in's as an example.
    assert set(conf.memagg) <= listed
    assert {'auth_url', 'username', 'password'} <= listed


def test_nova_scheduler_never_loads_memaggs_own_configuration():
    # A fresh interpreter: the tests' own imports have loaded memagg.conf.
    code = ('import sys, eventlet.patcher; '
            'import memagg.nova.filters, memagg.nova.weights; '
            'print(sorted(m for m in sys.modules '
            'if m.startswith("memagg.conf")), '
            'eventlet.patcher.is_monkey_patched("socket"))')
    process = subprocess.run([sys.executable, '-c', code],
                             capture_output=True, text=True, timeout=120)

    assert process.returncode == 0, process.stderr
    # Nor does importing them monkey-patch.
    assert process.stdout.strip() == '[] False'
    # Nova's CONF is what they read.
    assert filters.CONF is weights.CONF is nova.conf.CONF
