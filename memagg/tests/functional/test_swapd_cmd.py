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

"""memagg-swapd's console script as an operator runs it: ``memagg-swapd
--config-file memagg.conf``, its options from [swapd] and [DEFAULT] debug,
talked to over its control socket; as memagg-aio runs it, with the config
memagg-aio writes; a value it cannot run with is one line naming the
option, exit 2."""
import os
import pwd
import shutil
import signal
import subprocess
import tempfile

from oslo_config import cfg
from oslo_log import log as logging
import pytest

from memagg.cmd import aio
from memagg.compute import swapd as swapd_client
from memagg.conf import swapd as swapd_opts
from memagg.tests.functional import service_procs
from memagg.tests.functional import two_hosts

pytestmark = [pytest.mark.functional]

SWAPD = os.path.join(service_procs.BIN_DIR, 'memagg-swapd')


def _run(*args):
    return subprocess.run([SWAPD, *args], capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)


def test_runs_with_the_options_of_its_config_file():
    # unix socket paths are limited to 107 bytes: a short directory.
    root = tempfile.mkdtemp(prefix='msd', dir='/tmp')
    user = pwd.getpwuid(os.getuid()).pw_name
    daemon = two_hosts.Swapd('swapd', root, capacity_mb=64, socket_user=user)
    try:
        ping = daemon.start()
        assert ping['version'] == 1
        assert ping['transport'] == 'tcp'
        assert ping['endpoint'] == daemon.endpoint
        assert daemon.client().donor_stats()['capacity'] == 64 << 20
        assert os.path.isdir(os.path.join(daemon.state_dir, 'exports'))
        assert 'capacity 64 MiB' in daemon.log()
    finally:
        code = daemon.stop()
        log = daemon.log()
        shutil.rmtree(root, ignore_errors=True)
    assert code == 0, log


def test_memagg_aio_runs_it_with_the_directories_it_moved():
    conf = cfg.ConfigOpts()
    swapd_opts.register_opts(conf)
    logging.register_options(conf)
    conf([], default_config_files=[])
    root = tempfile.mkdtemp(prefix='msd', dir='/tmp')
    listen = 'tcp://127.0.0.1:%d' % service_procs.free_port()
    # An export_dir no user can make: memagg-aio moves all three
    # directories under its state dir, and memagg-swapd must use those.
    conf.set_override('control_socket', os.path.join(root, 'c.sock'),
                      group='swapd')
    conf.set_override('export_dir', '/proc/memagg-cannot/exports',
                      group='swapd')
    conf.set_override('listen', listen, group='swapd')
    conf.set_override('transport', 'tcp', group='swapd')
    proc = aio.ensure_swapd(conf, root)
    try:
        assert proc is not None, open(os.path.join(root, 'swapd.log')).read()
        control = os.path.join(root, 'swapd', 'control.sock')
        assert conf.swapd.control_socket == control
        assert swapd_client.SwapdClient(control).ping()['endpoint'] == listen
        assert os.path.isdir(os.path.join(root, 'swapd', 'exports'))
    finally:
        if proc is not None:
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(30)
        shutil.rmtree(root, ignore_errors=True)
    assert code == 0


def test_a_bad_value_is_one_line_naming_the_option_and_exit_2(tmp_path):
    config = tmp_path / 'memagg.conf'
    config.write_text('[swapd]\ncapacity_mb = many\n')
    proc = _run('--config-file', str(config))
    assert proc.returncode == 2
    assert proc.stderr.startswith(
        'memagg-swapd: error: [swapd] capacity_mb: '), proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_a_missing_config_file_is_one_line_and_exit_2(tmp_path):
    proc = _run('--config-file', str(tmp_path / 'missing.conf'))
    assert proc.returncode == 2
    assert proc.stderr == ('memagg-swapd: error: Failed to find some config '
                           'files: %s\n' % (tmp_path / 'missing.conf'))


def test_help_says_what_it_reads():
    proc = _run('--help')
    assert proc.returncode == 0, proc.stderr
    assert '--config-file PATH' in proc.stdout
    assert '[swapd] control_socket, export_dir, state_dir' in proc.stdout
    assert '--capacity-mb' not in proc.stdout
