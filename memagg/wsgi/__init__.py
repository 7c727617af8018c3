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

"""WSGI entry points: a module per service whose module-level
``application`` a WSGI server loads (``memagg.wsgi.api:application``).

Each reads memagg's configuration when it is imported: the config files
named, comma-separated, in MEMAGG_CONFIG_FILES and the config directories
in MEMAGG_CONFIG_DIRS, or, where a variable is unset or empty, memagg's
defaults (/etc/memagg/memagg.conf and /etc/memagg/memagg.conf.d/, as for
every memagg service).
"""
import os

from oslo_log import log as logging

from memagg.common import guru

CONFIG_FILES_ENV = 'MEMAGG_CONFIG_FILES'
CONFIG_DIRS_ENV = 'MEMAGG_CONFIG_DIRS'


def _paths(variable):
    paths = [p for p in os.environ.get(variable, '').split(',') if p]
    return paths or None


def configure(conf):
    """Parse ``conf`` from the config files the environment names (see
    above), set up logging and arm the Guru Meditation Report."""
    logging.register_options(conf)
    conf([], project='memagg',
         default_config_files=_paths(CONFIG_FILES_ENV),
         default_config_dirs=_paths(CONFIG_DIRS_ENV))
    logging.setup(conf, 'memagg')
    guru.enable(conf, 'memagg-api', on_signal=False)
