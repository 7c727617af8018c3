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

"""Command-line parsing shared by the admin tools (memagg-manage,
memagg-status): every mistake becomes one line on stderr."""
import contextlib
import io
import sys

from oslo_config import cfg

USAGE_ERROR = 2


class UsageError(Exception):
    """The command line asks for something that cannot be done."""


def parse(conf, argv, prog, description, default_config_files=None):
    """Parse ``argv`` into ``conf`` for ``prog``, whose --help opens with
    ``description``.

    Raises UsageError with argparse's or oslo.config's complaint alone
    (argparse would print the whole usage first); ``--help`` still prints
    and exits.
    """
    captured = io.StringIO()
    try:
        with contextlib.redirect_stderr(captured):
            conf(argv, project='memagg', prog=prog, description=description,
                 default_config_files=default_config_files)
    except SystemExit as done:
        if done.code:
            lines = captured.getvalue().strip().splitlines()
            raise UsageError(lines[-1].split(': error: ', 1)[-1]
                             if lines else 'bad arguments')
        raise
    except cfg.Error as error:
        raise UsageError(str(error))


def fail(prog, message, status=USAGE_ERROR):
    """Write ``prog: error: message`` on stderr; return ``status``."""
    sys.stderr.write('%s: error: %s\n' % (prog, message))
    return status


def say(text):
    """Write ``text`` and its newline on stdout in one write, flushed.
    print() writes a text and its end apart: in a process whose threads
    log to the same terminal or file (memagg-aio), another thread's line
    could land between them and cut the line a reader waits for."""
    sys.stdout.write(text + '\n')
    sys.stdout.flush()
