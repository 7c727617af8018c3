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

"""The [database] group: oslo.db's own options with memagg's defaults."""
from oslo_config import cfg
from oslo_db import options as db_options

_DEFAULT_CONNECTION = 'sqlite:////var/lib/memagg/memagg.sqlite'


def register_opts(conf):
    db_options.set_defaults(conf, connection=_DEFAULT_CONNECTION)


def set_lib_defaults():
    """memagg's [database] defaults, on CONF and on the option objects
    themselves (which is what oslo-config-generator reads)."""
    from memagg.conf import CONF
    db_options.set_defaults(CONF, connection=_DEFAULT_CONNECTION)
    cfg.set_defaults(db_options.database_opts,
                     connection=_DEFAULT_CONNECTION)


def list_opts():
    return {'database': db_options.database_opts}
