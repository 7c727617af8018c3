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

"""The [database] group: oslo.db's own options with memagg's defaults,
and the key that wraps the grants' secrets stored there."""
from oslo_config import cfg
from oslo_db import options as db_options

_DEFAULT_CONNECTION = 'sqlite:////var/lib/memagg/memagg.sqlite'

DEFAULT_SECRET_KEY_FILE = '/etc/memagg/secret.key'

memagg_opts = [
    cfg.StrOpt('secret_key_file', default=DEFAULT_SECRET_KEY_FILE,
               help='File holding the key that wraps (AES-256-GCM) every '
                    "grant's data-path secret in the database: 32 random "
                    'bytes, raw or as 64 hexadecimal digits, for example '
                    '"(umask 077; openssl rand -hex 32 > '
                    '/etc/memagg/secret.key)". It must be readable by '
                    "memagg's user only (mode 0600 or 0400); memagg refuses "
                    'a file group or others can read. Every host running '
                    'memagg-scheduler, memagg-manage or memagg-status needs '
                    'the same file. To change the key, see "memagg-manage '
                    'grant_secrets rewrap".'),
]


def register_opts(conf):
    db_options.set_defaults(conf, connection=_DEFAULT_CONNECTION)
    conf.register_opts(memagg_opts, group='database')


def set_lib_defaults():
    """memagg's [database] defaults, on CONF and on the option objects
    themselves (which is what oslo-config-generator reads)."""
    from memagg.conf import CONF
    db_options.set_defaults(CONF, connection=_DEFAULT_CONNECTION)
    cfg.set_defaults(db_options.database_opts,
                     connection=_DEFAULT_CONNECTION)


def list_opts():
    return {'database': db_options.database_opts + memagg_opts}
