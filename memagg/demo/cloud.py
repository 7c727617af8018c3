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

"""The demo cloud ``memagg-aio --demo`` boots: tiny guests on this host's
libvirtd (qemu:///system, TCG), each running a workload that shows one of
memagg's jobs, and the options that let memagg-compute show them within
minutes."""
import dataclasses
import os
import shutil
import subprocess
import tempfile
import threading

import libvirt
from oslo_log import log as logging

from memagg.common import cli
from memagg.common import exceptions
from memagg.common import retry
from memagg.demo import guest as guest_mod
from memagg.demo import swap as swap_mod
from memagg.drivers.hypervisor import base as hypervisor
from memagg.drivers.reclaim import base as reclaim_base

LOG = logging.getLogger(__name__)

#: The demo's domains' names start with this; memagg-compute in the demo
#: manages these alone ([compute] domain_name_regex), never the host's own.
PREFIX = 'memagg-demo-'

#: Seconds between the phases of a workload with several hot sets.
PHASE_S = 90

#: Host memory the demo leaves to everything else (the services, QEMU's
#: own overhead per guest), on top of its guests' booked memory.
HEADROOM_MB = 512

#: The swap file the demo adds on a host without swap, for host reclaim.
HOST_SWAP_MB = 512

#: What the demo's donor (a second memagg-swapd on this host standing in
#: for another host) lends.
DONOR_MB = 256

#: Seconds a guest's grant may take: its instance must be reported first.
GRANT_TIMEOUT = 120

#: A guest's grant is asked again a second after memagg answered that its
#: instance is not reported yet, for GRANT_TIMEOUT s.
GRANT_RETRIES = retry.Policy(attempts=None, interval=1, within=GRANT_TIMEOUT)


@dataclasses.dataclass(frozen=True)
class Workload:
    """One demo guest: ``hot_mb`` its hot sets in turn, PHASE_S apart (a
    single one is steady); ``shows`` what memagg does with it; ``memfd``
    False: its RAM is anonymous memory (QEMU's default) rather than a
    memfd; ``grant_mb``: remote memory granted to it once it is up, after
    which it writes ``fill_mb`` MiB of data, more than its RAM holds."""

    name: str
    memory_mb: int
    balloon: str
    hot_mb: tuple
    shows: str
    memfd: bool = True
    grant_mb: int = 0
    fill_mb: int = 0


WORKLOADS = (
    Workload(PREFIX + 'steady', 512, 'stats', (96,),
             'a steady 96 MiB hot set: its WSS estimate settles on it and '
             'the balloon gives the memory above [local_policy] '
             'min_guest_mb back to the host'),
    Workload(PREFIX + 'phases', 512, 'stats', (48, 160),
             'a hot set of 48 MiB, then 160 MiB, every %d s: the estimate '
             'follows each phase' % PHASE_S),
    Workload(PREFIX + 'noballoon', 256, 'none', (64,),
             'no balloon device: host-side reclaim pages its idle memory '
             'out to the host\'s swap (reclaimed_mb), as long as the '
             'pages it faults back stay under [host_reclaim] promotion_slo',
             memfd=False),
    Workload(PREFIX + 'remote', 256, 'stats', (32,),
             'outgrows its RAM: a grant of remote memory from the demo\'s '
             'donor becomes its swap, then it writes 240 MiB of data beside '
             'its 32 MiB hot set, and what its RAM cannot hold goes there',
             grant_mb=128, fill_mb=240),
)

#: What memagg-aio --demo sets before its config files are read (they
#: still win): a compute period of seconds, the demo's domains only,
#: Badis' estimate without its 64 MiB safety margin, so that the estimate
#: shown is the measurement itself, host reclaim, with memory idle for two
#: periods taken as cold, and remote-swap disks QEMU can open.
OPTION_DEFAULTS = {
    'compute': {'collect_interval': 3, 'balloon_stats_period': 2,
                'domain_name_regex': PREFIX},
    'wss': {'estimator': 'badis', 'sampler_backend': 'auto',
            'min_margin_mb': 0},
    'host_reclaim': {'controller': 'senpai', 'cold_age_s': 6},
    # QEMU (libvirt-qemu) connects to the remote-swap disks' sockets: a
    # directory it can reach, sockets it may open.
    'swapd': {'export_dir': '/run/memagg-demo/exports',
              'socket_user': 'libvirt-qemu'},
}


class Unavailable(Exception):
    """The demo cannot run on this host; the message says what is missing
    and how to get it."""


def set_defaults(conf):
    """memagg-compute's options for the demo (OPTION_DEFAULTS)."""
    for group, options in OPTION_DEFAULTS.items():
        for name, value in options.items():
            conf.set_default(name, value, group=group)


def available_mb():
    """MemAvailable of /proc/meminfo, in MiB."""
    with open('/proc/meminfo') as f:
        for line in f:
            if line.startswith('MemAvailable:'):
                return int(line.split()[1]) // 1024
    raise Unavailable('/proc/meminfo has no MemAvailable line')


def check_host(answers, workloads=WORKLOADS):
    """Unavailable, naming what is missing, unless libvirtd answers
    (``answers``: whether it does at qemu:///system), QEMU is installed and
    the guests fit in the host's available memory; then build the guest
    image (cached: seconds after the first time) and return its (kernel,
    initrd)."""
    if not answers:
        raise Unavailable('--demo needs libvirtd at qemu:///system and none '
                          'answers: run tools/setup.sh (it installs and '
                          'starts libvirtd), or start it with "libvirtd -d"')
    if shutil.which('qemu-system-x86_64') is None:
        raise Unavailable('--demo needs qemu-system-x86_64: run '
                          'tools/setup.sh, or apt-get install qemu-system-x86')
    wanted = sum(w.memory_mb for w in workloads) + HEADROOM_MB + DONOR_MB
    have = available_mb()
    if have < wanted:
        raise Unavailable('--demo needs %d MiB of available memory for its '
                          'guests and has %d: free some, or use a larger '
                          'machine' % (wanted, have))
    try:
        return guest_mod.build()
    except subprocess.CalledProcessError as exc:
        lines = (exc.stderr or '').strip().splitlines()
        raise Unavailable('the guest image could not be built: %s' % (
            lines[-1] if lines else 'build.sh exited with %d'
            % exc.returncode))


class DemoCloud:
    """The demo's guests on ``conn`` (a libvirt connection to
    qemu:///system): start() boots them in a thread of its own and changes
    their phases, stop() destroys them and their files."""

    def __init__(self, conn, workloads=WORKLOADS,
                 say=cli.say, grant=None,
                 host_swap=False):
        """``grant(instance_uuid, size_mb)``: remote memory for a guest, as
        memagg-scheduler's allocate_remote returns it (its uuid, granted_mb
        and slabs); NotFound while the instance is not reported yet.
        ``host_swap``: add a swap file for host reclaim when the host has
        no swap (a change to the whole host: memagg-aio --demo's to make,
        not a test's beside others)."""
        self.conn = conn
        self.workloads = workloads
        self.say = say
        self.grant = grant
        self.host_swap = host_swap
        #: Workload name: the Guest, once booted.
        self.guests = {}
        #: Workload name: why it did not boot (its console's last lines).
        self.failed = {}
        #: The swap file added for host reclaim, when the host had none.
        self.swap = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name='memagg-demo',
                                        daemon=True)
        # QEMU's unprivileged user must reach the guests' files.
        self.workdir = tempfile.mkdtemp(prefix='memagg-demo-', dir='/var/tmp')
        os.chmod(self.workdir, 0o755)

    def start(self):
        """Boot the guests and keep changing their phases, in a thread."""
        self._thread.start()

    def _boot(self, workload):
        guest = guest_mod.Guest(self.conn, self.workdir, workload.name,
                                memory_mb=workload.memory_mb,
                                balloon=workload.balloon,
                                memfd=workload.memfd, cancel=self._stop)
        try:
            guest.start()
            guest.set_hot(workload.hot_mb[0])
        except (libvirt.libvirtError, guest_mod.GuestError, OSError) as exc:
            guest.destroy()
            if self._stop.is_set():
                return
            self.failed[workload.name] = '%s; its console ended: %s' % (
                str(exc).splitlines()[0],
                ' | '.join(guest.console_tail()) or '(empty)')
            self.say('demo: %s did not boot (%s); the demo goes on without '
                     'it' % (workload.name, self.failed[workload.name]))
            return
        self.guests[workload.name] = guest
        self.say('demo: %s is up (%d MiB, uuid %s): %s' % (
            workload.name, workload.memory_mb, guest.uuid, workload.shows))
        if workload.grant_mb and self.grant is not None:
            try:
                self._use_remote(workload, guest)
            except (exceptions.MemaggException, guest_mod.GuestError,
                    OSError, retry.Stopped) as exc:
                if not self._stop.is_set():
                    self.say('demo: %s got no remote memory in use: %s'
                             % (workload.name, str(exc).splitlines()[0]))

    def _use_remote(self, workload, guest):
        """Grant the guest remote memory, wait for its swap on it, then
        have it write more than its RAM holds."""
        # NotFound: memagg-compute has not reported the guest yet (its
        # first period), which is expected, so the waits are logged at
        # DEBUG.
        grant = retry.call(
            self.grant, guest.uuid, workload.grant_mb,
            what='the grant for %s' % workload.name, policy=GRANT_RETRIES,
            retry_on=exceptions.NotFound, stop=self._stop,
            level=logging.DEBUG)
        dev = guest.wait_swap_disk(hypervisor.swap_serial(grant['uuid']),
                                   GRANT_TIMEOUT)
        self.say('demo: %s swaps to remote memory: grant %s of %d MiB from '
                 '%s on its %s' % (
                     workload.name, grant['uuid'], grant['granted_mb'],
                     ', '.join(sorted({s['donor_host']
                                       for s in grant['slabs']})), dev))
        guest.fill(workload.fill_mb, timeout=600)
        beat = guest.heartbeat() or {}
        self.say('demo: %s wrote %d MiB, more than its RAM holds; %d MiB '
                 'of its memory are in its remote swap' % (
                     workload.name, workload.fill_mb,
                     beat.get('swaps', {}).get(dev, {}).get('used_kb', 0)
                     // 1024))

    def _ensure_swap(self):
        """A swap file for host reclaim when the host has no swap."""
        reason = reclaim_base.host_swap_reason()
        if reason is None:
            return
        swap = swap_mod.SwapFile(os.path.join(self.workdir, 'host-swap'),
                                 HOST_SWAP_MB)
        try:
            swap.on()
        except (OSError, subprocess.CalledProcessError) as exc:
            self.say('demo: no swap for host reclaim (%s), and a swap file '
                     'could not be added (%s): host reclaim stays off'
                     % (reason, getattr(exc, 'stderr', None) or exc))
            return
        self.swap = swap
        self.say('demo: the host has no swap (%s): added %s (%d MiB) for '
                 'host reclaim until the demo stops'
                 % (reason, swap.path, HOST_SWAP_MB))

    def _run(self):
        if self.host_swap:
            self._ensure_swap()
        for workload in self.workloads:
            if self._stop.is_set():
                return
            self._boot(workload)
        phase = 0
        while not self._stop.wait(PHASE_S):
            phase += 1
            for workload in self.workloads:
                guest = self.guests.get(workload.name)
                if guest is None or len(workload.hot_mb) < 2:
                    continue
                hot = workload.hot_mb[phase % len(workload.hot_mb)]
                try:
                    guest.set_hot(hot)
                except (OSError, guest_mod.GuestError) as exc:
                    LOG.warning('demo: %s did not take its %d MiB phase: %s',
                                workload.name, hot, exc)

    def stop(self):
        """Destroy every demo guest (one booting too) and remove their
        files."""
        self._stop.set()
        if self._thread.is_alive():
            # Its waits end at once; a libvirt call under way is seconds.
            self._thread.join()
        for guest in self.guests.values():
            guest.destroy()
        if self.swap is not None:
            try:
                self.swap.off()
            except subprocess.CalledProcessError as exc:
                self.say('demo: swapoff %s failed (%s); it stays on until '
                         'the next boot' % (self.swap.path,
                                            exc.stderr.strip()))
        shutil.rmtree(self.workdir, ignore_errors=True)
