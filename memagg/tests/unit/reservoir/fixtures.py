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
the installed package does not register them yet."""
import importlib
import importlib.metadata

import pytest
from stevedore import extension

from memagg.conf import reservoir as reservoir_conf

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
