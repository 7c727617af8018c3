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

"""The tempest plug-in class that tempest loads from memagg's entry point."""
import os

from tempest import config
from tempest.test_discover import plugins

from tempest_plugin import config as memagg_config


class MemaggTempestPlugin(plugins.TempestPlugin):
    """Registers memagg's options and client, and where its tests are."""

    def load_tests(self):
        here = os.path.dirname(os.path.abspath(__file__))
        test_dir = os.path.join(here, 'tests')
        top_level_dir = os.path.dirname(here)
        return test_dir, top_level_dir

    def register_opts(self, conf):
        config.register_opt_group(conf,
                                  memagg_config.service_available_group,
                                  memagg_config.ServiceAvailableGroup)
        config.register_opt_group(conf, memagg_config.memagg_group,
                                  memagg_config.MemaggGroup)

    def get_opt_lists(self):
        return [
            (memagg_config.service_available_group.name,
             memagg_config.ServiceAvailableGroup),
            (memagg_config.memagg_group.name, memagg_config.MemaggGroup),
        ]

    def get_service_clients(self):
        params = config.service_client_config('memagg')
        params.update(name='memagg', service_version='memagg',
                      module_path='tempest_plugin.services',
                      client_names=['MemaggClient'])
        return [params]
