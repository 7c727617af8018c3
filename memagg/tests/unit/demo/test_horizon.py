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

"""The demo's Horizon without one running: what it needs is said in a
line, and the plug-in files it hands Horizon are memagg.dashboard's. (A
real one: functional/test_dashboard_browser.py, test_dashboard_fleet.py
and the demo in functional/test_aio.py.)"""
from memagg import dashboard
from memagg.dashboard import enabled
from memagg.demo import horizon


def test_installed_here():
    # test-requirements.txt installs Horizon beside memagg.
    assert horizon.missing() is None


def test_missing_says_how_to_get_it(monkeypatch):
    monkeypatch.setattr(horizon.importlib.util, 'find_spec',
                        lambda name: None)
    assert horizon.missing() == (
        "Horizon beside memagg: run tools/setup.sh, or pip install "
        "'memagg[dashboard]'")


def test_it_loads_memaggs_enabled_files_and_policy_snippet():
    assert horizon.DASHBOARD.samefile(dashboard.__path__[0])
    assert (horizon.DASHBOARD / 'enabled').samefile(enabled.__path__[0])
    assert (horizon.DASHBOARD / 'local_settings.d' / '_90_memagg.py').exists()
