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

"""memagg on the two hypervisor hosts of this machine (hypervisor_hosts.py)
plus a donor, for metadata-only live migration (ALGORITHMS.md §5).

What two_hosts.py runs (memagg-scheduler, a donor memagg-swapd and
memagg-compute on libvirt's test driver, RabbitMQ, MariaDB), with two
consumers instead of one: hypervisor hosts A and B, each with a
memagg-swapd and a memagg-compute whose [DEFAULT] host is the hypervisor's
name in the Nova double. The daemons of a host with a mount namespace of
its own (HostB) run in it (HostB.command), so its memagg-compute reaches
that host's libvirtd at qemu:///system and its memagg-swapd puts its
export sockets in that host's /run.

Both consumers' [swapd] export_dir is the same path under /run, one
directory on each host, as the domain XML names the socket and Nova keeps
it (doc/source/migration.rst); their control sockets, state directories
and TCP ports differ. memagg-scheduler's compute API driver is nova,
through the real Keystone, pointed at whatever the catalog names (the
test's Nova double, migrating_nova()).
"""
import contextlib
import os
import shutil
import subprocess
import uuid

from memagg.cmd import swapd as swapd_cmd
from memagg.tests.functional import nova_catalog
from memagg.tests.functional import nova_double
from memagg.tests.functional import nova_libvirt
from memagg.tests.functional import service_procs
from memagg.tests.functional import two_hosts


@contextlib.contextmanager
def migrating_nova(keystone, contract, hypervisors, libvirt_options=None):
    """The Nova double (of ``contract``) whose migrator moves guests
    between ``hypervisors`` as Nova's libvirt driver does, with
    ``libvirt_options`` ([libvirt]), and a compute service on each host;
    in Keystone's catalog while the block runs, closed afterwards."""
    with contextlib.ExitStack() as stack:
        migrator = nova_libvirt.LiveMigrator(hypervisors.by_name,
                                             libvirt_options)
        stack.callback(migrator.close)
        project_id, user_id = nova_catalog.admin_ids(keystone)
        double = nova_double.NovaDouble(keystone, contract, project_id,
                                        user_id, migrator=migrator)
        stack.callback(double.close)
        for host in hypervisors.by_name:
            double.add_service(host)
        stack.enter_context(nova_catalog.in_catalog(keystone, [
            ('compute', 'nova', double.compute_url)]))
        yield double


class HostSwapd(two_hosts.Swapd):
    """A consumer's memagg-swapd serving its exports in ``export_dir`` (a
    path of ``hypervisor``'s /run) and run in that host's namespace when it
    has one."""

    def __init__(self, name, root, export_dir, hypervisor,
                 fabric_provider=None):
        super().__init__(name, root, socket_user=two_hosts.QEMU_USER,
                         fabric_provider=fabric_provider)
        self.hypervisor = hypervisor
        self.export_dir = export_dir
        swapd_cmd.write_config(self.config_file, {
            'control_socket': self.control, 'export_dir': export_dir,
            'state_dir': self.state_dir, 'listen': self.endpoint,
            'capacity_mb': 0, **self.transport(),
            'socket_user': two_hosts.QEMU_USER}, debug=True)

    def argv(self):
        argv = super().argv()
        command = getattr(self.hypervisor, 'command', None)
        return command(argv) if command else argv

    def socket_path(self, grant_uuid):
        """Where this process reaches the export socket of a grant."""
        return self.hypervisor.path(os.path.join(self.export_dir,
                                                 '%s.sock' % grant_uuid))


class HostProcess(service_procs.Process):
    """A console script run in ``hypervisor``'s namespace, if it has one."""

    def __init__(self, hypervisor, name, args, log_path):
        self.name = name
        self.log_path = log_path
        self._log = open(log_path, 'wb')
        argv = [os.path.join(service_procs.BIN_DIR, name)] + list(args)
        command = getattr(hypervisor, 'command', None)
        self.proc = subprocess.Popen(
            command(argv) if command else argv, stdout=self._log,
            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)


class MigrationHosts(two_hosts.TwoHosts):
    """The scheduler, the donor, and consumers ``a`` and ``b`` on the
    ``hypervisors`` (hypervisor_hosts.Hosts); see the module. The
    inherited ``consumer`` is host A."""

    def __init__(self, root, mysql_db, rabbit_url, hypervisors, keystone,
                 overrides=None, fabric_provider=None):
        overrides = dict(overrides or {})
        scheduler = two_hosts.TwoHosts._merge(
            {'compute': {'compute_api_driver': 'nova'},
             'nova': nova_catalog.nova_options(keystone)},
            overrides.get('scheduler', {}))
        overrides['scheduler'] = scheduler
        super().__init__(root, mysql_db, rabbit_url, overrides,
                         fabric_provider)
        self.hypervisors = hypervisors
        # The same path on both hosts, a directory of each one's /run.
        self.export_dir = '/run/memagg-mig-%s/exports' % uuid.uuid4().hex[:8]
        for hypervisor in (hypervisors.a, hypervisors.b):
            hypervisor.makedirs(os.path.dirname(self.export_dir))
            hypervisor.makedirs(self.export_dir)
        self.a = self._consumer(hypervisors.a, overrides.get('a', {}))
        self.b = self._consumer(hypervisors.b, overrides.get('b', {}))
        self.consumer = self.a

    def _consumer(self, hypervisor, extra):
        swapd = HostSwapd(hypervisor.name, self.root, self.export_dir,
                          hypervisor, self.fabric_provider)
        host = two_hosts.Host(hypervisor.name, swapd,
                              os.path.join(self.root,
                                           '%s.conf' % hypervisor.name),
                              hypervisor=hypervisor)
        # Inside host B, qemu:///system is B's libvirtd.
        self._write(host, 'qemu:///system', extra)
        return host

    def hosts(self):
        return [self.a, self.b, self.donor]

    def _compute(self, host):
        return HostProcess(
            host.hypervisor, 'memagg-compute',
            ['--config-file', host.config],
            os.path.join(self.root, '%s-compute.log' % host.name))

    def stop(self):
        """TwoHosts.stop(); the export directories go too."""
        bad = super().stop()
        for hypervisor in (self.hypervisors.a, self.hypervisors.b):
            shutil.rmtree(hypervisor.path(os.path.dirname(self.export_dir)),
                          ignore_errors=True)
        return bad
