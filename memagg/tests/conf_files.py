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

"""Options read from a real config file, as a service would read them."""
from oslo_config import cfg
import pytest

from memagg.common import exceptions


def group_from_file(tmp_path, conf_module, text):
    """A fresh ConfigOpts with ``conf_module``'s options registered, parsed
    from a memagg.conf holding ``[group]`` and ``text``."""
    path = tmp_path / 'memagg.conf'
    path.write_text('[%s]\n%s\n' % (conf_module.GROUP.name, text))
    conf = cfg.ConfigOpts()
    conf_module.register_opts(conf)
    conf(['--config-file', str(path)], project='memagg',
         default_config_files=[])
    return conf


def refused(tmp_path, conf_module, text, load):
    """The InvalidParameter that ``load`` raises on a ConfigOpts read as
    group_from_file reads ``text`` (failing the test when it raises none)."""
    conf = group_from_file(tmp_path, conf_module, text)
    with pytest.raises(exceptions.InvalidParameter) as info:
        load(conf)
    return info.value
