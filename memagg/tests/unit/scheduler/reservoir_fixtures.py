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

"""Fixtures of the global memory reservoir's tests: the [reservoir]
options and the memagg.reservoir plug-ins, made available to a test when
the installed package does not register them yet; a reservoir on SQLite
with memagg-compute replaced by ComputeDouble, and three hosts."""
import importlib
import importlib.metadata

import pytest
from stevedore import extension

from memagg.conf import reservoir as reservoir_conf
from memagg.drivers.reservoir import donors
from memagg.scheduler import reservoir
from memagg.tests.unit.scheduler import reservoir_cluster
from memagg.tests.unit.scheduler.reservoir_cluster import VM_1, VM_2
from memagg.tests.unit.scheduler import compute_double

PLUGINS = {
    'power_of_two': 'memagg.drivers.reservoir.donors:PowerOfTwo',
    'largest_first': 'memagg.drivers.reservoir.donors:LargestFirst',
    'best_fit': 'memagg.drivers.reservoir.donors:BestFit',
}


@pytest.fixture
def reservoir_opts(conf):
    """CONF with the [reservoir] group registered."""
    if 'reservoir' not in conf.conf:
        reservoir_conf.register_opts(conf.conf)
    return conf


@pytest.fixture
def reservoir_plugins(tmp_path, monkeypatch):
    """The memagg.reservoir entry points, from a distribution's metadata
    on sys.path when the installed memagg lacks them (stevedore reads them
    as it reads any package's)."""
    if not importlib.metadata.entry_points(group='memagg.reservoir'):
        dist = tmp_path / 'memagg_reservoir_plugins-0.dist-info'
        dist.mkdir()
        (dist / 'METADATA').write_text(
            'Metadata-Version: 2.1\nName: memagg-reservoir-plugins\n'
            'Version: 0\n')
        (dist / 'entry_points.txt').write_text(
            '[memagg.reservoir]\n' + ''.join(
                '%s = %s\n' % item for item in PLUGINS.items()))
        monkeypatch.syspath_prepend(str(tmp_path))
        importlib.invalidate_caches()
    # stevedore keeps what it found per namespace for the process's life.
    monkeypatch.delitem(extension.ExtensionManager.ENTRY_POINT_CACHE,
                        'memagg.reservoir', raising=False)
    return sorted(PLUGINS)


@pytest.fixture
def ctxt(reservoir_opts, sqlite_db, admin_context):
    return admin_context


@pytest.fixture
def compute():
    return compute_double.ComputeDouble()


def make_reservoir(conf, compute, selection=None):
    """A Reservoir on ``compute`` (a ComputeDouble), donors chosen by
    ``selection`` (largest first by default)."""
    return reservoir.Reservoir(conf.conf, compute_api=compute,
                               selection=selection or donors.LargestFirst())


@pytest.fixture
def gmc(conf, compute):
    return make_reservoir(conf, compute)


@pytest.fixture
def three_hosts(ctxt):
    """Consumer c (VM_1 booked 4096, VM_2 booked 1024), donors a (1024 MiB
    lendable) and b (512)."""
    reservoir_cluster.host(ctxt, 'c', 4096, [(VM_1, 4096), (VM_2, 1024)])
    reservoir_cluster.host(ctxt, 'a', 1024)
    reservoir_cluster.host(ctxt, 'b', 512)
    return ctxt
