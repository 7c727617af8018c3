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

"""memagg-scheduler's defaults of library options."""
from memagg.cmd import scheduler


def test_the_rpc_thread_pool_is_small_unless_configured(conf, tmp_path):
    # The fixture's set_default is undone after the test.
    scheduler.set_defaults(conf)
    conf.conf([], project='memagg', default_config_files=[])
    assert conf.conf.executor_thread_pool_size == scheduler.EXECUTOR_THREADS

    config = tmp_path / 'memagg.conf'
    config.write_text('[DEFAULT]\nexecutor_thread_pool_size = 32\n')
    conf.conf(['--config-file', str(config)], project='memagg')
    assert conf.conf.executor_thread_pool_size == 32
