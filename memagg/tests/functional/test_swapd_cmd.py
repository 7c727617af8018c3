"""memagg-swapd's console script as an operator runs it: ``memagg-swapd
--config-file memagg.conf``, its options from [swapd] and [DEFAULT] debug,
talked to over its control socket; a value it cannot run with is one line
naming the option, exit 2."""
import os
import pwd
import shutil
import subprocess
import tempfile

import pytest

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
