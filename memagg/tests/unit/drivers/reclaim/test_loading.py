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

"""[host_reclaim] mechanism: loaded by name, or the first this host has."""
import os

import pytest

from memagg.common import exceptions
from memagg.conf import CONF
from memagg.drivers.reclaim import base as mechanism_base


def test_auto_takes_madvise_here_and_memcg_says_why_not():
    CONF.set_override('mechanism', 'auto', 'host_reclaim')
    assert mechanism_base.load(CONF).name == 'madvise'
    CONF.set_override('mechanism', 'memcg', 'host_reclaim')
    if os.path.exists('/sys/fs/cgroup/cgroup.controllers'):
        pytest.skip('this host has cgroup v2')
    with pytest.raises(mechanism_base.Unavailable, match='memcg: .*v1'):
        mechanism_base.load(CONF)


def test_an_unknown_mechanism_names_the_option():
    CONF.set_override('mechanism', 'zram', 'host_reclaim')
    with pytest.raises(exceptions.InvalidParameter,
                       match=r'\[host_reclaim\] mechanism.*madvise'):
        mechanism_base.load(CONF)
