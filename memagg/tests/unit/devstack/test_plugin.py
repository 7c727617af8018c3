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

"""memagg's DevStack plug-in (devstack/), every phase run in bash against
a stand-in for DevStack.

fake_devstack.sh is a STAND-IN, not DevStack. It defines the DevStack
functions the plug-in calls (is_service_enabled, install_package,
setup_develop, iniset, write_uwsgi_config, run_process, recreate_database,
create_service_user, ...) and the variables stack.sh would set. Each call
is recorded in a log this module reads; the ini functions really edit the
files, so nova.conf, memagg.conf, tempest.conf and the uWSGI ini are read
back here as Nova, memagg and tempest would read them. The commands the
plug-in runs by path are real: memagg-manage migrates a SQLite database,
oslopolicy-sample-generator writes the sample policy.

A real DevStack cannot run here. stack.sh builds a whole cloud: it clones
Keystone, Nova, Placement, Glance, Neutron, Horizon, tempest and the
requirements repository from opendev.org's git and installs each from
source, and this machine's network reaches package registries only. It
also runs every service as a systemd unit (run_process writes
devstack@*.service units and starts them with systemctl), which needs
systemd as PID 1, which this machine does not have. What the stand-in
cannot show is therefore DevStack's side: that its functions do what their
contracts say (read from DevStack's doc/source/plugins.rst, functions-common,
inc/ini-config and lib/apache), that Apache proxies to the uWSGI socket,
and that the units start.
"""
import configparser
import grp
import os
import pathlib
import pwd
import shlex
import shutil
import sqlite3
import subprocess
import sys

from nova.scheduler import filters as nova_filters
from nova.scheduler import weights as nova_weights
import nova.conf.libvirt
import nova.conf.scheduler
from keystoneauth1 import loading as ks_loading
from oslo_config import cfg
import pytest

from memagg.db import secret_box
from memagg.nova import conf as memagg_nova_conf
from memagg.nova import filters as memagg_filters
from memagg.nova import weights as memagg_weights
from tempest_plugin import config as tempest_config

REPO_ROOT = pathlib.Path(__file__).resolve().parents[4]
STANDIN = pathlib.Path(__file__).with_name('fake_devstack.sh')
DEVSTACK_FILES = ('devstack/plugin.sh', 'devstack/lib/memagg',
                  'devstack/settings')
STACK_PHASES = ('pre-install', 'install', 'post-config', 'extra',
                'test-config')
# Commands the plug-in runs from DevStack's bin directory; their shims
# record the call and run memagg's own (this virtualenv's).
SHIMMED = ('memagg-manage', 'oslopolicy-sample-generator', 'uwsgi')
MEMAGG_SERVICES = ['memagg-api', 'memagg-scheduler', 'memagg-swapd',
                   'memagg-compute']
ALL_IN_ONE = ('key,mysql,rabbit,placement-api,n-api,n-sch,n-cond,n-cpu,'
              'horizon,tempest')
# [filter_scheduler] enabled_filters as DevStack's configure_nova writes it.
NOVA_FILTERS = 'ComputeFilter,ComputeCapabilitiesFilter,ImagePropertiesFilter'
API_URL = 'http://192.0.2.10/memory-aggregation'
UWSGI_MODULE = 'memagg.wsgi.api:application'
# The stand-in's stack user is the test's; QEMU's group stands as its own
# group, which install -g can give without root.
STACK_USER = pwd.getpwuid(os.getuid()).pw_name
QEMU_GROUP = grp.getgrgid(os.getgid()).gr_name


class Node:
    """One DevStack node under ``root`` (standing for /): the services
    ENABLED_SERVICES and DISABLED_SERVICES name, a nova.conf as DevStack's
    configure_nova leaves it, and the log of the plug-in's calls."""

    def __init__(self, root, enabled=ALL_IN_ONE, disabled='',
                 memagg_dir=REPO_ROOT, nova_conf=None):
        self.root = root
        self.memagg_dir = memagg_dir
        self.log = root / 'calls.log'
        self.bin = root / 'bin'
        self.conf_dir = root / 'etc' / 'memagg'
        self.memagg_conf = self.conf_dir / 'memagg.conf'
        self.uwsgi_ini = self.conf_dir / 'memagg-api-uwsgi.ini'
        self.state_path = root / 'opt' / 'stack' / 'data' / 'memagg'
        self.run_dir = root / 'run' / 'memagg' / 'swapd'
        self.database = root / 'opt' / 'stack' / 'data' / 'memagg.sqlite'
        self.nova_conf = root / 'etc' / 'nova' / 'nova.conf'
        self.tempest_conf = (root / 'opt' / 'stack' / 'tempest' / 'etc'
                             / 'tempest.conf')
        self.horizon_local = (root / 'opt' / 'stack' / 'horizon'
                              / 'openstack_dashboard' / 'local')
        self.env = dict(os.environ, STANDIN_ROOT=str(root),
                        STANDIN_LOG=str(self.log),
                        STANDIN_PYTHON=sys.executable,
                        ENABLED_SERVICES=enabled, DISABLED_SERVICES=disabled,
                        MEMAGG_DIR=str(memagg_dir),
                        MEMAGG_CONF_DIR=str(self.conf_dir),
                        MEMAGG_SWAPD_RUN_DIR=str(self.run_dir),
                        MEMAGG_QEMU_GROUP=QEMU_GROUP,
                        PATH='%s:%s' % (self.bin, os.environ['PATH']))
        self.bin.mkdir()
        venv_bin = pathlib.Path(sys.executable).parent
        for command in SHIMMED:
            shim = self.bin / command
            shim.write_text(
                '#!/usr/bin/env bash\nsource %s\n_record "${0##*/}" "$@"\n'
                'exec %s/"${0##*/}" "$@"\n'
                % (shlex.quote(str(STANDIN)), shlex.quote(str(venv_bin))))
            shim.chmod(0o755)
        self.nova_conf.parent.mkdir(parents=True)
        self.nova_conf.write_text(nova_conf or (
            '[DEFAULT]\ndebug = True\n\n[filter_scheduler]\n'
            'enabled_filters = %s\n\n[libvirt]\nvirt_type = qemu\n'
            % NOVA_FILTERS))

    def run(self, mode, *phases):
        """One DevStack run (stack.sh, unstack.sh or clean.sh): a bash
        that sources the stand-in and devstack/settings, then plugin.sh
        for each phase, exiting at the first failing command as stack.sh
        does."""
        script = ('set -o errexit -o pipefail\nsource %s\n'
                  'source "$MEMAGG_DIR/devstack/settings"\nrun_plugin %s\n'
                  % (shlex.quote(str(STANDIN)),
                     shlex.join((mode,) + phases)))
        result = subprocess.run(['bash', '-c', script], env=self.env,
                                cwd=self.root, capture_output=True,
                                text=True, timeout=300,
                                stdin=subprocess.DEVNULL)
        assert result.returncode == 0, result.stdout + result.stderr

    def stack(self):
        self.run('stack', *STACK_PHASES)

    def calls(self):
        """Every recorded call, as its words; ``==`` lines mark phases."""
        return [shlex.split(line)
                for line in self.log.read_text().splitlines()]

    def calls_by_phase(self):
        """{phase: its calls} of the stack.sh run."""
        phases = {}
        current = None
        for call in self.calls():
            if call[0] == '==':
                current = call[2]
                phases[current] = []
            else:
                phases[current].append(call)
        return phases

    def named(self, name):
        return [call for call in self.calls() if call[0] == name]

    def index(self, predicate):
        """Position in the log of the first call matching ``predicate``."""
        return next(i for i, call in enumerate(self.calls())
                    if predicate(call))

    def processes(self, function='run_process'):
        return [call[1] for call in self.named(function)]

    def ini(self, path):
        # Not strict: nova.conf's available_filters has several lines
        # (read them with nova() instead).
        parser = configparser.ConfigParser(interpolation=None, strict=False)
        assert parser.read(path), path
        return parser

    def nova(self):
        """nova.conf parsed with Nova's own options (and memagg's [memagg]),
        as nova-scheduler and nova-compute parse it: available_filters has
        several lines, which configparser cannot hold."""
        conf = cfg.ConfigOpts()
        nova.conf.scheduler.register_opts(conf)
        nova.conf.libvirt.register_opts(conf)
        memagg_nova_conf.register_opts(conf)
        conf(['--config-file', str(self.nova_conf)], project='nova',
             default_config_files=[], default_config_dirs=[])
        return conf


def _panel_files(memagg_dir, kind):
    """The Horizon files memagg ships for openstack_dashboard/local/KIND."""
    return sorted(path.name for path in
                  (memagg_dir / 'memagg' / 'dashboard' / kind).glob(
                      '_[0-9]*.py'))


def _linked(node, kind):
    directory = node.horizon_local / kind
    return sorted(path.name for path in directory.iterdir()
                  if path.is_symlink()) if directory.exists() else []


@pytest.fixture(scope='module')
def all_in_one(tmp_path_factory):
    """One node running everything, after stack.sh."""
    node = Node(tmp_path_factory.mktemp('all-in-one'))
    node.stack()
    return node


@pytest.mark.slow
def test_each_phase_does_its_part(all_in_one):
    phases = all_in_one.calls_by_phase()
    assert list(phases) == list(STACK_PHASES)
    names = {phase: [call[0] for call in calls]
             for phase, calls in phases.items()}
    assert 'install_package' in names['pre-install']
    assert 'setup_develop' in names['install']
    for name in ('write_uwsgi_config', 'create_service_user',
                 'get_or_create_endpoint', 'oslopolicy-sample-generator'):
        assert name in names['post-config'], name
    for name in ('recreate_database', 'memagg-manage', 'run_process',
                 'wait_for_service'):
        assert name in names['extra'], name
    assert [call[1] for call in phases['test-config']
            if call[0] == 'iniset'] == [str(all_in_one.tempest_conf)] * 4


@pytest.mark.slow
def test_build_dependencies_come_before_memagg(all_in_one):
    install = all_in_one.named('install_package')
    assert len(install) == 1
    assert {'gcc', 'libfabric-dev', 'libssl-dev'} <= set(install[0][1:])
    # The client memagg requires, from the tree, before memagg.
    assert all_in_one.named('setup_develop') == [
        ['setup_develop', str(REPO_ROOT / 'python-memaggclient')],
        ['setup_develop', str(REPO_ROOT)]]
    assert (all_in_one.index(lambda c: c[0] == 'install_package')
            < all_in_one.index(lambda c: c[0] == 'setup_develop'))


@pytest.mark.slow
def test_database_is_created_then_migrated(all_in_one):
    assert all_in_one.named('recreate_database') == [
        ['recreate_database', 'memagg']]
    assert all_in_one.named('memagg-manage') == [
        ['memagg-manage', '--config-file', str(all_in_one.memagg_conf),
         'db', 'upgrade']]
    recreate = all_in_one.index(lambda c: c[0] == 'recreate_database')
    upgrade = all_in_one.index(lambda c: c[0] == 'memagg-manage')
    first_start = all_in_one.index(lambda c: c[0] == 'run_process')
    assert recreate < upgrade < first_start
    # memagg-manage really migrated the database memagg.conf names.
    with sqlite3.connect(all_in_one.database) as db:
        assert db.execute('SELECT version_num FROM alembic_version'
                          ).fetchone()[0]


@pytest.mark.slow
def test_api_runs_under_uwsgi_behind_apache(all_in_one):
    assert all_in_one.named('write_uwsgi_config') == [
        ['write_uwsgi_config', str(all_in_one.uwsgi_ini), UWSGI_MODULE,
         '/memory-aggregation', '', 'memagg-api']]
    uwsgi = all_in_one.ini(all_in_one.uwsgi_ini)['uwsgi']
    assert uwsgi['module'] == UWSGI_MODULE
    # What memagg.wsgi reads its configuration from.
    assert uwsgi['env'] == 'MEMAGG_CONFIG_FILES=%s' % all_in_one.memagg_conf
    api = all_in_one.named('run_process')[0]
    assert api == ['run_process', 'memagg-api',
                   '%s/uwsgi --procname-prefix memagg --ini %s'
                   % (all_in_one.bin, all_in_one.uwsgi_ini)]
    assert all_in_one.named('wait_for_service') == [
        ['wait_for_service', '60', API_URL]]
    assert (all_in_one.index(lambda c: c[:2] == api[:2])
            < all_in_one.index(lambda c: c[0] == 'wait_for_service'))


@pytest.mark.slow
def test_keystone_has_the_service_user_and_endpoint(all_in_one):
    assert all_in_one.named('create_service_user') == [
        ['create_service_user', 'memagg', 'admin']]
    assert all_in_one.named('get_or_create_service') == [
        ['get_or_create_service', 'memagg', 'memory-aggregation',
         'Memory aggregation']]
    assert all_in_one.named('get_or_create_endpoint') == [
        ['get_or_create_endpoint', 'memory-aggregation', 'RegionOne',
         API_URL]]


@pytest.mark.slow
def test_swapd_starts_before_compute(all_in_one):
    assert all_in_one.processes() == MEMAGG_SERVICES
    starts = {call[1]: call for call in all_in_one.named('run_process')}
    conf = str(all_in_one.memagg_conf)
    # Unprivileged: the stack user, in QEMU's group.
    assert starts['memagg-swapd'] == [
        'run_process', 'memagg-swapd',
        '%s/memagg-swapd --config-file %s' % (all_in_one.bin, conf),
        QEMU_GROUP, STACK_USER]
    run_dir = os.stat(all_in_one.run_dir)
    assert (run_dir.st_mode & 0o777, run_dir.st_uid, run_dir.st_gid) == (
        0o750, os.getuid(), grp.getgrnam(QEMU_GROUP).gr_gid)
    assert all_in_one.index(
        lambda call: call[:2] == ['sudo', 'install'] and
        call[-1] == str(all_in_one.run_dir)) < all_in_one.index(
        lambda call: call[:2] == ['run_process', 'memagg-swapd'])
    assert starts['memagg-compute'] == [
        'run_process', 'memagg-compute',
        '%s/memagg-compute --config-file %s' % (all_in_one.bin, conf),
        'libvirt']


@pytest.mark.slow
def test_memagg_conf(all_in_one):
    conf = all_in_one.ini(all_in_one.memagg_conf)
    assert conf['database']['connection'] == 'sqlite:///%s' % (
        all_in_one.database)
    # The key wrapping the grants' secrets, the stack user's alone.
    key_file = all_in_one.conf_dir / 'secret.key'
    assert conf['database']['secret_key_file'] == str(key_file)
    assert key_file.stat().st_mode & 0o777 == 0o600
    assert secret_box.load_key(str(key_file))
    assert conf['DEFAULT']['transport_url'].startswith('rabbit://')
    assert conf['api']['auth_strategy'] == 'keystone'
    assert conf['keystone_authtoken']['username'] == 'memagg'
    assert conf['compute']['compute_api_driver'] == 'nova'
    assert conf['compute']['balloon_stats_period'] == '5'
    # The management address, never every address.
    assert conf['DEFAULT']['my_ip'] == '192.0.2.10'
    assert conf['swapd']['listen'] == 'tcp://192.0.2.10:7450'
    assert conf['swapd']['socket_group'] == QEMU_GROUP
    assert 'socket_user' not in conf['swapd']
    assert conf['swapd']['control_socket'] == str(
        all_in_one.run_dir / 'control.sock')
    assert conf['swapd']['export_dir'] == str(all_in_one.run_dir / 'exports')
    for group in ('nova', 'placement'):
        assert conf[group]['auth_type'] == 'password'
        assert conf[group]['username'] == 'memagg'
        assert conf[group]['auth_url'] == 'http://192.0.2.10/identity'
    assert conf['placement']['enabled'] == 'False'
    assert (all_in_one.conf_dir / 'policy.yaml.sample').read_text()


@pytest.mark.slow
def test_nova_loads_the_filter_and_weigher(all_in_one):
    nova_conf = all_in_one.nova()
    scheduler = nova_conf.filter_scheduler
    assert scheduler.available_filters == [
        'nova.scheduler.filters.all_filters',
        'memagg.nova.filters.RealMemoryFilter']
    assert scheduler.enabled_filters == (NOVA_FILTERS.split(',')
                                         + ['RealMemoryFilter'])
    assert scheduler.weight_classes == [
        'nova.scheduler.weights.all_weighers',
        'memagg.nova.weights.RealMemoryWeigher']
    # Nova's own loaders find memagg's classes from these paths.
    assert memagg_filters.RealMemoryFilter in (
        nova_filters.HostFilterHandler().get_matching_classes(
            scheduler.available_filters))
    assert memagg_weights.RealMemoryWeigher in (
        nova_weights.HostWeightHandler().get_matching_classes(
            scheduler.weight_classes))
    assert nova_conf.libvirt.mem_stats_period_seconds == 5
    # [memagg] passes the checks nova-scheduler makes at start.
    settings = memagg_nova_conf.load(nova_conf)
    assert settings.on_failure == 'open'
    # The credentials load as keystoneauth loads them for memagg's client.
    auth = ks_loading.load_auth_from_conf_options(nova_conf, 'memagg')
    assert auth.auth_url == 'http://192.0.2.10/identity'
    assert nova_conf.memagg.username == 'nova'
    assert nova_conf.memagg.project_name == 'service'


@pytest.mark.slow
def test_tempest_conf(all_in_one):
    conf = all_in_one.ini(all_in_one.tempest_conf)
    assert conf['service_available']['memagg'] == 'True'
    assert dict(conf['memagg']) == {'catalog_type': 'memory-aggregation',
                                    'endpoint_type': 'public',
                                    'region': 'RegionOne'}
    # Options memagg's tempest plug-in registers.
    assert set(conf['memagg']) <= {opt.name for opt in
                                   tempest_config.MemaggGroup}


@pytest.mark.slow
def test_horizon_gets_the_panels_memagg_ships(all_in_one):
    for kind in ('enabled', 'local_settings.d'):
        assert _linked(all_in_one, kind) == _panel_files(REPO_ROOT, kind)
    panels = _panel_files(REPO_ROOT, 'enabled')
    assert bool(all_in_one.named('warn')) == (not panels)


@pytest.mark.slow
def test_compute_node(tmp_path):
    node = Node(tmp_path, enabled='rabbit,n-cpu',
                disabled='memagg-api,memagg-scheduler')
    node.stack()
    assert node.processes() == ['memagg-swapd', 'memagg-compute']
    for name in ('recreate_database', 'memagg-manage', 'write_uwsgi_config',
                 'create_service_user', 'wait_for_service'):
        assert not node.named(name), name
    nova_conf = node.nova()
    assert nova_conf.libvirt.mem_stats_period_seconds == 5
    assert nova_conf.filter_scheduler.enabled_filters == (
        NOVA_FILTERS.split(','))
    assert 'memagg' not in node.ini(node.nova_conf)
    # No tempest, no test-config work.
    assert node.calls_by_phase()['test-config'] == []


@pytest.mark.slow
def test_controller_without_compute(tmp_path):
    node = Node(tmp_path, enabled='key,mysql,rabbit,n-api,n-sch',
                disabled='memagg-compute,memagg-swapd')
    node.stack()
    assert node.processes() == ['memagg-api', 'memagg-scheduler']
    nova_conf = node.nova()
    assert 'RealMemoryFilter' in nova_conf.filter_scheduler.enabled_filters
    assert 'mem_stats_period_seconds' not in node.ini(node.nova_conf)[
        'libvirt']


@pytest.mark.slow
def test_nova_settings_are_appended_to_once(tmp_path):
    node = Node(tmp_path, enabled='n-sch', nova_conf=(
        '[filter_scheduler]\n'
        'available_filters = nova.scheduler.filters.all_filters\n'
        'available_filters = my.filters.RackFilter\n'
        'enabled_filters = ComputeFilter,RackFilter\n'
        'weight_classes = nova.scheduler.weights.ram.RAMWeigher\n'))
    # A second post-config (a re-run of stack.sh on the same nova.conf)
    # must not add memagg's entries twice.
    node.run('stack', 'post-config', 'post-config')
    scheduler = node.nova().filter_scheduler
    assert scheduler.available_filters == [
        'nova.scheduler.filters.all_filters', 'my.filters.RackFilter',
        'memagg.nova.filters.RealMemoryFilter']
    assert scheduler.enabled_filters == ['ComputeFilter', 'RackFilter',
                                         'RealMemoryFilter']
    assert scheduler.weight_classes == [
        'nova.scheduler.weights.ram.RAMWeigher',
        'memagg.nova.weights.RealMemoryWeigher']


def _memagg_tree(root, panel_files):
    """A memagg checkout with the plug-in, the policy generator's file and
    the given files under memagg/dashboard/."""
    tree = root / 'memagg-src'
    shutil.copytree(REPO_ROOT / 'devstack', tree / 'devstack')
    shutil.copytree(REPO_ROOT / 'etc' / 'memagg', tree / 'etc' / 'memagg')
    for name in panel_files:
        path = tree / 'memagg' / 'dashboard' / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text('')
    return tree


@pytest.mark.slow
def test_horizon_without_panel_files(tmp_path):
    node = Node(tmp_path, enabled='horizon',
                memagg_dir=_memagg_tree(tmp_path, ['enabled/__init__.py']))
    node.run('stack', 'post-config')
    assert _linked(node, 'enabled') == []
    assert len(node.named('warn')) == 1


@pytest.mark.slow
def test_horizon_panel_files_are_linked_then_removed(tmp_path):
    tree = _memagg_tree(tmp_path, [
        'enabled/__init__.py', 'enabled/_9999_fake_panel.py',
        'local_settings.d/_99_fake.py'])
    node = Node(tmp_path, enabled='horizon', memagg_dir=tree)
    node.run('stack', 'post-config')
    assert _linked(node, 'enabled') == ['_9999_fake_panel.py']
    assert _linked(node, 'local_settings.d') == ['_99_fake.py']
    assert not node.named('warn')
    node.run('clean')
    assert _linked(node, 'enabled') == _linked(node, 'local_settings.d') == []


@pytest.mark.slow
def test_unstack_then_clean(tmp_path):
    node = Node(tmp_path)
    node.stack()
    node.run('unstack')
    # memagg-swapd goes last: it serves the guests' swap until
    # memagg-compute has stopped.
    assert node.processes('stop_process') == [
        'memagg-api', 'memagg-scheduler', 'memagg-compute', 'memagg-swapd']
    node.run('clean')
    assert node.named('remove_uwsgi_config') == [
        ['remove_uwsgi_config', str(node.uwsgi_ini), 'memagg-api']]
    assert not node.conf_dir.exists()
    assert not node.state_path.exists()
    assert _linked(node, 'enabled') == []


def test_shellcheck_finds_nothing():
    if shutil.which('shellcheck') is None:
        message = 'shellcheck is missing: tools/setup.sh installs it'
        if os.environ.get('CI', '').lower() == 'true':
            pytest.fail(message)
        pytest.skip(message)
    # -x follows the files' "source" lines, named from the repository root.
    result = subprocess.run(
        ['shellcheck', '-x', *DEVSTACK_FILES,
         str(STANDIN.relative_to(REPO_ROOT))],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
