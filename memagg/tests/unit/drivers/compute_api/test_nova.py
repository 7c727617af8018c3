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

"""The nova driver's configuration checks and its error mapping.

Each test has its own ConfigOpts and [nova] OptGroup: loading an auth
plug-in registers its options (some required) in the group object, and
they must not leak into the global CONF.
"""
import socket

from oslo_config import cfg
from oslo_config import fixture as config_fixture
import pytest

from memagg.common import exceptions
from memagg.conf import compute as compute_conf
from memagg.conf import nova as nova_conf_mod
from memagg.drivers.compute_api import base
from memagg.drivers.compute_api import nova


@pytest.fixture
def nova_conf(monkeypatch):
    monkeypatch.setattr(nova_conf_mod, 'GROUP',
                        cfg.OptGroup(nova_conf_mod.GROUP.name))
    conf = cfg.ConfigOpts()
    compute_conf.register_opts(conf)
    nova_conf_mod.register_opts(conf)
    conf([], project='memagg', default_config_files=[])
    fixture = config_fixture.Config(conf)
    fixture.setUp()
    fixture.config(compute_api_driver='nova', group='compute')
    yield fixture
    fixture.cleanUp()


def test_missing_credentials_fail_at_start_naming_auth_type(nova_conf):
    with pytest.raises(exceptions.InvalidParameter) as err:
        base.load(nova_conf.conf)
    assert '[nova] auth_type' in str(err.value)


def test_unknown_auth_plugin_is_named(nova_conf):
    nova_conf.config(auth_type='passwd', group='nova')
    with pytest.raises(exceptions.InvalidParameter) as err:
        base.load(nova_conf.conf)
    assert '[nova] auth_type' in str(err.value)
    assert 'password' in str(err.value)


def test_incomplete_password_plugin_names_the_missing_option(nova_conf):
    nova_conf.config(auth_type='password', group='nova')
    with pytest.raises(exceptions.InvalidParameter) as err:
        base.load(nova_conf.conf)
    assert '[nova] auth_url' in str(err.value)


_VM = 'b5a2c2a4-1f0e-4a55-9d0e-3c4f1b9a0001'
_CALLS = {
    'get_qos_weight': (_VM,),
    'live_migrate': (_VM, 'node-2'),
    'get_server_state': (_VM,),
    'get_migration_progress': (_VM,),
    'set_host_enabled': ('node-1', False, 'memagg: consolidated'),
}
# What executing a plan calls; the none driver cannot answer them.
_EXECUTION_CALLS = sorted(set(_CALLS) - {'get_qos_weight'})


@pytest.mark.parametrize('call', sorted(_CALLS))
def test_calls_to_unreachable_nova_are_unavailable_not_a_crash(nova_conf,
                                                               call):
    """Unavailable, not NotConfigured: the caller may try again."""
    with socket.socket() as sock:
        # Bound but not listening: connections are refused at once.
        sock.bind(('127.0.0.1', 0))
        url = 'http://127.0.0.1:%d/v2.1' % sock.getsockname()[1]
        nova_conf.config(auth_type='none', endpoint_override=url,
                         group='nova')
        driver = base.load(nova_conf.conf)
        assert isinstance(driver, nova.NovaComputeApi)
        with pytest.raises(base.ComputeApiUnavailable) as err:
            getattr(driver, call)(*_CALLS[call])
    assert not isinstance(err.value, base.ComputeApiNotConfigured)
    assert str(err.value).startswith('Nova: ')


@pytest.mark.parametrize('call', _EXECUTION_CALLS)
def test_the_none_driver_cannot_execute_and_names_the_option(
        nova_conf, call):
    nova_conf.config(compute_api_driver='none', group='compute')
    driver = base.load(nova_conf.conf)
    with pytest.raises(base.ComputeApiNotConfigured) as err:
        getattr(driver, call)(*_CALLS[call])
    assert '[compute] compute_api_driver = nova' in str(err.value)
