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

"""Run memagg's admin tools as real processes, as an operator would."""
import os
import subprocess
import sys

# Generous: these only start Python and talk to a local database.
TIMEOUT = 120


def write_config(tmp_path, connection, **defaults):
    """A memagg.conf with ``connection`` and [DEFAULT] ``defaults``."""
    path = tmp_path / 'memagg.conf'
    lines = ['[DEFAULT]'] + ['%s = %s' % item for item in defaults.items()]
    lines += ['[database]', 'connection = %s' % connection,
              # A wrong URL fails at once rather than after ten retries.
              'max_retries = 0']
    path.write_text('\n'.join(lines) + '\n')
    return path


def run(tool, config, *args):
    """Run console script ``tool`` with ``--config-file config`` and
    ``args``; return the CompletedProcess (text output)."""
    script = os.path.join(os.path.dirname(sys.executable), tool)
    assert os.path.exists(script), '%s not installed: pip install -e .' % tool
    return subprocess.run([script, '--config-file', str(config), *args],
                          capture_output=True, text=True, timeout=TIMEOUT,
                          stdin=subprocess.DEVNULL)
