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
their main() in this process where only the command line is tested.

The processes are forked from a process of this module's that has imported
the tools' entry points once (an import of memagg's command modules costs
one to two seconds): each run is still a process of its own, with a fresh
CONF, database engine and logging, that calls its entry point as the
console script does."""
import atexit
import contextlib
import io
import json
import os
import select
import signal
import subprocess
import sys
import threading

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


# The forking process: reads one JSON request a line (tool, argv, env),
# forks a child that runs the tool's entry point as its console script
# would (sys.exit(main()) with that argv), its output in files, and
# answers one JSON line: [exit status, stdout, stderr]. It ends at EOF on
# its stdin, so it never outlives the test process that started it.
FORKER = """
import json
import os
import sys
import tempfile
from importlib import metadata

mains = {ep.name: ep.load() for ep in metadata.entry_points(
    group='console_scripts') if ep.value.startswith('memagg.cmd.')}
for line in sys.stdin:
    request = json.loads(line)
    with tempfile.TemporaryDirectory() as tmp:
        paths = [os.path.join(tmp, name) for name in ('out', 'err')]
        pid = os.fork()
        if pid == 0:
            try:
                os.environ.clear()
                os.environ.update(request['env'])
                os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
                for fd, path in zip((1, 2), paths):
                    os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT), fd)
                sys.argv = request['argv']
                status = mains[request['tool']]()
            except SystemExit as exc:
                status = exc.code
            except BaseException:
                import traceback
                traceback.print_exc()
                status = 1
            if status is not None and not isinstance(status, int):
                print(status, file=sys.stderr)
                status = 1
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(status or 0)
        _, wait_status = os.waitpid(pid, 0)
        texts = []
        for path in paths:
            with open(path) as stream:
                texts.append(stream.read())
    print(json.dumps([os.waitstatus_to_exitcode(wait_status)] + texts),
          flush=True)
"""

_forker = None
_forker_lock = threading.Lock()


def _stop_forker():
    if _forker is not None and _forker.poll() is None:
        _forker.stdin.close()
        _forker.wait(TIMEOUT)


atexit.register(_stop_forker)


def run(tool, config, *args):
    """Run console script ``tool`` with ``--config-file config`` and
    ``args`` as a process of its own; return the CompletedProcess (text
    output)."""
    return run_script(tool, '--config-file', str(config), *args)


def run_script(tool, *args):
    """Run console script ``tool`` with ``args`` as a process of its own,
    forked from the process that imported the entry points; return the
    CompletedProcess (text output)."""
    global _forker
    script = os.path.join(os.path.dirname(sys.executable), tool)
    assert os.path.exists(script), '%s not installed: pip install -e .' % tool
    argv = [script, *args]
    request = json.dumps({'tool': tool, 'argv': argv,
                          'env': dict(os.environ)})
    with _forker_lock:
        if _forker is None or _forker.poll() is not None:
            # A session of its own: a run past its deadline is killed
            # with the forking process, as one process group.
            _forker = subprocess.Popen(
                [sys.executable, '-c', FORKER], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, text=True, start_new_session=True)
        _forker.stdin.write(request + '\n')
        _forker.stdin.flush()
        ready = select.select([_forker.stdout], [], [], TIMEOUT)[0]
        answer = _forker.stdout.readline() if ready else ''
        if not answer:
            os.killpg(_forker.pid, signal.SIGKILL)
            _forker.wait()
            raise AssertionError(
                '%s gave no answer within %d s (the forking process exited '
                '%s): %s' % (tool, TIMEOUT, _forker.returncode, argv))
    status, out, err = json.loads(answer)
    return subprocess.CompletedProcess(argv, status, out, err)


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
