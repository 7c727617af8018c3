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
