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

"""memagg-sim's plots (memagg.sim.plots): PNG files from results built by
hand, and the label of a swept setting."""
from memagg.sim import plots
from memagg.tests.unit.sim import hand_results


def test_plots_are_png_files(tmp_path):
    paths = plots.write_all(hand_results.results(), str(tmp_path))

    assert [p.rsplit('/', 1)[-1] for p in paths] == list(plots.FILES)
    assert 'remote.png' in plots.FILES
    for path in paths:
        with open(path, 'rb') as stream:
            data = stream.read()
        assert data.startswith(b'\x89PNG\r\n\x1a\n')
        assert len(data) > 5000


def test_setting_label_writes_out_the_values_swept():
    options = {'placement_params': '{"cpu_threshold": 0.6}',
               'history_length': '30', 'underload_require': 'both'}

    assert plots.setting_label(options, ['placement_params',
                                         'history_length']) == (
        'cpu_threshold=0.6\nhistory_length=30')
    assert plots.setting_label(options, ['underload_require']) == (
        'underload_require=both')
