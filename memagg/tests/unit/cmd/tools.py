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

"""Run memagg's admin tools as real processes, as an operator would, or
their main() in this process where only the command line is tested."""
import contextlib
import io
import os
import subprocess
import sys

from oslo_log import log as logging

from memagg.conf import CONF
from memagg.tests import grant_key

# Generous: these only start Python and talk to a local database.
TIMEOUT = 120


def write_config(tmp_path, connection, **defaults):
    """A memagg.conf with ``connection``, the tests' grant secret key file
    and [DEFAULT] ``defaults``."""
    path = tmp_path / 'memagg.conf'
    lines = ['[DEFAULT]'] + ['%s = %s' % item for item in defaults.items()]
    lines += ['[database]', 'connection = %s' % connection,
              # A wrong URL fails at once rather than after ten retries.
              'max_retries = 0',
              'secret_key_file = %s' % grant_key.path()]
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


def run_main(main, prog, *argv):
    """Call a tool's ``main(argv)`` as its console script would, in this
    process: (status, stdout, stderr). For command lines refused before
    the tool does anything (a process start costs seconds of imports).
    CONF is left parsed with no arguments, as the ``conf`` fixture has it,
    without the tool's command-line options."""
    out, err = io.StringIO(), io.StringIO()
    saved = sys.argv
    CONF.clear()
    # main() registers oslo.log's options, which oslo.log's formatters read
    # from then on: they stay; the tool's own command-line options go.
    logging.register_options(CONF)
    before = set(CONF)
    sys.argv = [prog]
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(list(argv))
    finally:
        sys.argv = saved
        CONF.clear()
        for name in set(CONF) - before:
            CONF.unregister_opt(CONF._opts[name]['opt'])
        CONF([], project='memagg', default_config_files=[])
    return status, out.getvalue(), err.getvalue()
