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

"""Build, boot and drive memagg's tiny guest under libvirt (TCG): the
guests of the demo cloud, of the functional tests and of the benchmarks.

The guest is built by image/build.sh from Debian packages and cached in
/var/cache/memagg-guest (MEMAGG_GUEST_CACHE overrides). Its console
(ttyS0) goes to a file its driver reads; its second serial port (ttyS1) is
a unix socket the driver writes commands to ("hot N", "fill N", "check").
"""
import functools
import os
import re
import socket
import subprocess
import time
import uuid as uuid_mod

import libvirt

IMAGE = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'image')
CACHE = os.environ.get('MEMAGG_GUEST_CACHE', '/var/cache/memagg-guest')


class GuestError(Exception):
    """The guest did not answer in time, or answered that it failed."""


DOMAIN_XML = """<domain type='qemu'>
  <name>%(name)s</name>
  <uuid>%(uuid)s</uuid>
  <memory unit='MiB'>%(memory_mb)d</memory>
  <currentMemory unit='MiB'>%(memory_mb)d</currentMemory>
  %(backing)s
  <vcpu>1</vcpu>
  <os>
    <type arch='x86_64' machine='pc'>hvm</type>
    <kernel>%(kernel)s</kernel>
    <initrd>%(initrd)s</initrd>
    <cmdline>console=ttyS0 panic=-1 loglevel=4 %(cmdline)s</cmdline>
  </os>
  <features><acpi/><apic/></features>
  <on_poweroff>destroy</on_poweroff>
  <on_reboot>destroy</on_reboot>
  <on_crash>destroy</on_crash>
  <devices>
    <emulator>/usr/bin/qemu-system-x86_64</emulator>
    %(disk)s
    <serial type='file'>
      <source path='%(console)s'/>
      <target port='0'/>
    </serial>
    <serial type='unix'>
      <source mode='bind' path='%(command)s'/>
      <target port='1'/>
    </serial>
    <video><model type='none'/></video>
    %(balloon)s
  </devices>
</domain>"""

DISK_XML = """<disk type='file' device='disk'>
      <driver name='qemu' type='raw'/>
      <source file='%s'/>
      <target dev='vda' bus='virtio'/>
    </disk>"""

HEARTBEAT_RE = re.compile(
    r'MEMAGG HEARTBEAT (?P<n>\d+) passes=(?P<passes>\d*) '
    r'total_kb=(?P<total_kb>\d+) free_kb=(?P<free_kb>\d+) '
    r'swap_used_kb=(?P<swap_used_kb>-?\d+) pswpin=(?P<pswpin>\d+) '
    r'pswpout=(?P<pswpout>\d+) swaps=(?P<swaps>\S*)\r?\n')

BALLOON_XML = ("<memballoon model='virtio'><stats period='%d'/>"
               "</memballoon>")
NO_BALLOON_XML = "<memballoon model='none'/>"
# The first line of a kernel panic on the console.
_PANIC = 'Kernel panic - not syncing'
# A frame of a kernel call trace on the console ("[    1.29]  ? f+0x1/0x2",
# "<TASK>"): many lines that say less than the panic above them.
_TRACE_FRAME = re.compile(
    r'^\[\s*\d+\.\d+\]\s+(\? )?(\S+\+0x[0-9a-f]+/0x[0-9a-f]+|</?TASK>)')

# Guest RAM in a memfd: 4 KiB host pages. QEMU asks for transparent huge
# pages on anonymous guest RAM, and the host then keeps one accessed bit per
# 2 MiB: measured here with clear_refs + smaps Referenced, a 60 MiB hot set
# read as 112 MiB (anonymous, THP) against 64 MiB (memfd).
MEMFD_XML = ("<memoryBacking><source type='memfd'/><access mode='shared'/>"
             "</memoryBacking>")


@functools.lru_cache(maxsize=None)
def build():
    """Return (kernel, initrd) paths, building the guest on first use.

    Asked once per process: build.sh's look at the apt lists costs about
    a CPU second, which every guest paid again."""
    out = subprocess.run([os.path.join(IMAGE, 'build.sh'), CACHE],
                         check=True, capture_output=True, text=True)
    path = out.stdout.strip().splitlines()[-1]
    return os.path.join(path, 'vmlinuz'), os.path.join(path, 'initrd.img')


class Guest:
    """One transient libvirt domain running the guest's workload.

    ``balloon``: 'stats' (virtio balloon with a stats period), 'device'
    (balloon device, no stats period set), 'none' (no balloon device), or
    'nodriver' (device present, guest does not load its driver).
    ``swap_mb``: size of a virtio disk the guest swaps to (0: none).
    ``memfd``: back guest RAM with a memfd (4 KiB pages) rather than
    anonymous memory (transparent huge pages). ``cancel``: a
    threading.Event that ends every wait for the guest's answer at once
    (GuestError), for a driver that stops while the guest boots.
    """

    def __init__(self, conn, workdir, name, memory_mb=256, balloon='stats',
                 stats_period=2, swap_mb=0, memfd=True, cancel=None):
        self.conn = conn
        self.name = name
        self.cancel = cancel
        self.uuid = str(uuid_mod.uuid4())
        self.memory_mb = memory_mb
        # QEMU runs as an unprivileged user: it must reach these files.
        self.dir = os.path.join(workdir, name)
        os.makedirs(self.dir, exist_ok=True)
        os.chmod(workdir, 0o755)
        os.chmod(self.dir, 0o777)
        self.console = os.path.join(self.dir, 'console.log')
        self.command = os.path.join(self.dir, 'command.sock')
        kernel, initrd = build()
        disk = ''
        if swap_mb:
            swap = os.path.join(self.dir, 'swap.img')
            with open(swap, 'wb') as f:
                f.truncate(swap_mb * 1024 * 1024)
            os.chmod(swap, 0o666)
            disk = DISK_XML % swap
        self.xml = DOMAIN_XML % {
            'name': name, 'uuid': self.uuid, 'memory_mb': memory_mb,
            'kernel': kernel, 'initrd': initrd, 'disk': disk,
            'backing': MEMFD_XML if memfd else '',
            # no_timer_check: on a loaded host (several TCG guests booting
            # on 2 cores) the kernel's IO-APIC timer check missed its ticks
            # and the guest panicked ("IO-APIC + timer doesn't work").
            'cmdline': 'no_timer_check' + (
                ' memagg.noballoon' if balloon == 'nodriver' else ''),
            'console': self.console, 'command': self.command,
            'balloon': {'stats': BALLOON_XML % stats_period,
                        'device': "<memballoon model='virtio'/>",
                        'nodriver': "<memballoon model='virtio'/>",
                        'none': NO_BALLOON_XML}[balloon]}
        self.dom = None
        self._sock = None

    def start(self, timeout=120):
        """Boot the guest and wait for its workload's READY line; a guest
        that stops first (a kernel panic, no room for its initrd) fails at
        once rather than at the timeout."""
        self.dom = self.conn.createXML(self.xml)
        self.wait_console(r'MEMAGG READY', timeout, while_running=True)
        return self

    def _running(self):
        try:
            return bool(self.dom.isActive())
        except libvirt.libvirtError as exc:
            if exc.get_error_code() == libvirt.VIR_ERR_NO_DOMAIN:
                return False
            raise

    def console_text(self):
        try:
            with open(self.console, errors='replace') as f:
                return f.read()
        except FileNotFoundError:
            return ''

    def console_tail(self, lines=5):
        """The console's last ``lines`` lines, the frames of a kernel call
        trace left out; after a kernel panic, its first ``lines`` lines
        from the panic's own (the lines between it and the trace vary: a
        panic in a workqueue names the workqueue)."""
        kept = [line for line in self.console_text().strip().splitlines()
                if not _TRACE_FRAME.match(line)]
        panics = [i for i, line in enumerate(kept) if _PANIC in line]
        if panics:
            return kept[panics[-1]:][:lines]
        return kept[-lines:]

    def wait_console(self, pattern, timeout, after=0, while_running=False):
        """Wait for a console line matching ``pattern`` that starts at or
        after offset ``after``; return the match. ``while_running``: fail
        as soon as the guest's domain has stopped."""
        regex = re.compile(pattern, re.M)
        deadline = time.monotonic() + timeout
        while True:
            match = regex.search(self.console_text(), after)
            if match:
                return match
            if self.cancel is not None and self.cancel.is_set():
                raise GuestError('stopped waiting for /%s/ on the console '
                                 'of %s' % (pattern, self.name))
            if while_running and not self._running():
                raise GuestError('%s stopped before /%s/ on its console'
                                 % (self.name, pattern))
            if time.monotonic() >= deadline:
                raise GuestError(
                    'no /%s/ on the console of %s within %s s; its tail:\n%s'
                    % (pattern, self.name, timeout,
                       self.console_text()[-3000:]))
            time.sleep(0.2)

    def send(self, line):
        if self._sock is None:
            self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self._sock.connect(self.command)
        self._sock.sendall(line.encode() + b'\n')

    def set_hot(self, mb, timeout=120):
        """Make ``mb`` MiB the guest's hot set; wait until it is in place."""
        mark = len(self.console_text())
        self.send('hot %d' % mb)
        return self.wait_console(r'MEMAGG PHASE (\d+) hot=%d\b' % mb,
                                 timeout, after=mark)

    def heartbeats(self):
        """The number of the last heartbeat the guest printed (0: none)."""
        beats = re.findall(r'MEMAGG HEARTBEAT (\d+)', self.console_text())
        return int(beats[-1]) if beats else 0

    def heartbeat(self):
        """The guest's last full heartbeat as a dict: n, passes, total_kb,
        free_kb, swap_used_kb, pswpin, pswpout (pages) and swaps
        ({dev: {size_kb, used_kb, priority}}); None before the first."""
        beats = list(HEARTBEAT_RE.finditer(self.console_text()))
        if not beats:
            return None
        beat = beats[-1].groupdict()
        out = {k: int(v or 0) for k, v in beat.items() if k != 'swaps'}
        out['swaps'] = {}
        for area in filter(None, beat['swaps'].split(',')):
            dev, size, used, prio = area.split(':')
            out['swaps'][dev] = {'size_kb': int(size), 'used_kb': int(used),
                                 'priority': int(prio)}
        return out

    def wait_swap_disk(self, serial, timeout=60, after=0):
        """Wait until the guest turned the disk of ``serial`` into swap
        (its "SWAPDISK dev serial=... on" line); return the device name.
        Fails at once on the guest's "failed" line."""
        match = self.wait_console(
            r'MEMAGG SWAPDISK (\S+) serial=%s (on|failed[^\r\n]*)\r?$'
            % re.escape(serial), timeout, after)
        if match.group(2) != 'on':
            raise GuestError(match.group(0))
        return match.group(1)

    def fill(self, mb, timeout=300, cold=False):
        """Write ``mb`` MiB of random data in the guest; its sum. The
        guest's reader re-reads it with its hot set unless ``cold``."""
        line = 'fill %d' % mb + (' cold' if cold else '')
        return self._data_command(line, 'FILLED', 'FILL-FAILED', mb,
                                  timeout)

    def hold(self, mb, hot_mb, timeout=300):
        """Start a process in the guest with ``mb`` MiB of random data in
        anonymous memory, whose last ``hot_mb`` MiB it reads again and
        again while the rest stays idle; the data's sum once written."""
        return self._data_command('hold %d %d' % (mb, hot_mb), 'HELD',
                                  'HOLD-FAILED', mb, timeout)

    def _data_command(self, line, done, failed, mb, timeout):
        """Send ``line``, a command that writes ``mb`` MiB of random data,
        and wait for its answer ``done`` (with the data's size and sum) or
        ``failed``; the sum. GuestError unless ``mb`` MiB were written."""
        mark = len(self.console_text())
        self.send(line)
        match = self.wait_console(
            r'MEMAGG (?:%s \d+ mb=(\d+) sum=([0-9a-f]{16})|%s[^\r\n]*)'
            % (done, failed), timeout, after=mark)
        if match.group(1) != str(mb):
            raise GuestError(match.group(0))
        return match.group(2)

    def run_rule(self, timeout=60):
        """Run the guest rule's script over every disk again; return
        (exit status, its log on one line)."""
        mark = len(self.console_text())
        self.send('rule')
        match = self.wait_console(r'MEMAGG RULE rc=(\d+) ([^\r\n]*)\r?$',
                                  timeout, after=mark)
        return int(match.group(1)), match.group(2)

    def start_check(self):
        """Ask the guest to checksum its random data again; return the
        console offset its answer comes after (for wait_check)."""
        mark = len(self.console_text())
        self.send('check')
        return mark

    def wait_check(self, mark, timeout=300):
        """The sum the guest answered after console offset ``mark``."""
        match = self.wait_console(
            # CHECK-FAILED (the data could not be read) fails at once; a
            # sum counts with its line's end only, since a line read half
            # written (CI) showed a short one.
            r'MEMAGG (?:CHECK \d+ mb=\d+ sum=([0-9a-f]{16})[\r\n]'
            r'|CHECK-FAILED[^\r\n]*)',
            timeout, after=mark)
        if not match.group(1):
            raise GuestError(match.group(0))
        return match.group(1)

    def check(self, timeout=300):
        """The sum of the guest's random data, read again now."""
        return self.wait_check(self.start_check(), timeout)

    def destroy(self):
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        if self.dom is not None:
            try:
                self.dom.destroy()
            except Exception:  # noqa: BLE001 - already gone is fine
                pass
            self.dom = None
