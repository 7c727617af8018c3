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

"""Options of the [swapd] group: this host's memagg-swapd and remote memory.

memagg-swapd reads its own options here (control_socket to socket_group).
memagg-compute talks to it over its control socket: it donates slabs of
this host's memory, creates the exports its VMs swap to, hot-plugs them and
reads their swap-ghost stream. memagg-aio also starts memagg-swapd with
these options when none answers.
"""
import re

from oslo_config import cfg
from oslo_config import types

from memagg.conf import default


class Endpoint(types.String):
    """Where memagg-swapd's donor service is reached: ``tcp://HOST:PORT``
    or ``rdma://HOST:PORT`` (a host name or IPv4 address, port 1-65535)."""

    # The grammar the C core parses (native/swapd/endpoint.c), so that a bad
    # value is refused when the config is read, naming its option.
    _GRAMMAR = re.compile(r'(?:tcp|rdma)://[A-Za-z0-9._-]+:([0-9]{1,5})')

    def __init__(self):
        super().__init__(type_name='endpoint value')

    def __call__(self, value):
        value = super().__call__(value)
        match = self._GRAMMAR.fullmatch(value)
        if not match or not 0 < int(match.group(1)) <= 65535:
            raise ValueError('must be tcp://HOST:PORT or rdma://HOST:PORT '
                             '(port 1-65535), not %r' % value)
        return value


GROUP = cfg.OptGroup('swapd', title='memagg-swapd and remote memory options')

opts = [
    cfg.BoolOpt('enabled', default=True,
                help='Use remote memory on this host: lend slabs to other '
                     'hosts\' VMs and give this host\'s VMs remote swap. '
                     'False: memagg-compute never talks to memagg-swapd '
                     'and reports nothing lendable.'),
    cfg.StrOpt('control_socket', default='/run/memagg/swapd/control.sock',
               help='Unix socket of memagg-swapd\'s control protocol.'),
    cfg.StrOpt('export_dir', default='/run/memagg/swapd/exports',
               help='Directory of the per-VM NBD sockets memagg-swapd '
                    'serves; QEMU\'s user must be able to reach it.'),
    cfg.StrOpt('state_dir', default='/var/lib/memagg/swapd',
               help='memagg-swapd\'s export tables and the local '
                    'durability copies of this host\'s remote-swap disks '
                    '(local/<instance>/<grant>.img). Needs as much disk as '
                    'the VMs\' grants.'),
    cfg.IntOpt('local_copy_reserve_mb', default=1024, min=0,
               help='Disk space, MiB, memagg-compute keeps free on the '
                    'filesystem of the local copies (state_dir): the room '
                    'it reports for new grants, which memagg-scheduler '
                    'does not grant beyond (every page of a grant, on a '
                    'donor or not, is copied there), is that filesystem\'s '
                    'free space less this and less what the copies of its '
                    'grants may still grow by.'),
    cfg.Opt('listen', type=Endpoint(), default='tcp://$my_ip:7450',
            help='Where memagg-swapd serves this host\'s donated slabs: '
                 'the management network only. Other hosts\' memagg-swapd '
                 'connect to this port (firewall it from anything else); '
                 'tcp://0.0.0.0:PORT listens on every address.'),
    cfg.Opt('advertise', type=Endpoint(),
            help='Endpoint other hosts reach the donated slabs at, as '
                 'tcp://HOST:PORT. Default: listen\'s, with 127.0.0.1 '
                 'for 0.0.0.0 (one-host set-ups only).'),
    cfg.IntOpt('capacity_mb', default=0, min=0, max=1 << 40,
               help='Memory this host\'s memagg-swapd may lend to others '
                    '(MiB; 0: none). memagg-compute reports as lendable '
                    'at most what memagg-swapd says its capacity is.'),
    cfg.StrOpt('transport', default='auto', choices=['auto', 'tcp', 'rdma'],
               help='How this host serves the memory it lends: rdma is '
                    'one-sided reads and writes through libfabric (the '
                    'provider fabric_provider names), tcp is memagg-swapd\'s '
                    'framed protocol. auto uses rdma when libfabric offers '
                    'an RDMA provider (verbs or efa), else tcp. A consumer '
                    'reaches each donor as its endpoint says (tcp:// or '
                    'rdma://).'),
    cfg.StrOpt('fabric_provider',
               help='The libfabric provider of the rdma transport, as '
                    'fi_info -l names it: verbs (InfiniBand, RoCE, iWARP), '
                    'efa, or tcp and shm (no RDMA device: the same '
                    'one-sided code over sockets or shared memory). Unset: '
                    'the first of verbs, efa and tcp that libfabric offers. '
                    'Set and missing, memagg-swapd does not start.'),
    cfg.StrOpt('socket_user',
               help='User the export sockets are given to (QEMU\'s user, '
                    'e.g. libvirt-qemu); needs memagg-swapd to run as root. '
                    'Unset: memagg-swapd\'s own user. Prefer socket_group.'),
    cfg.StrOpt('socket_group',
               help='Group the export sockets (mode 0660) are given to: one '
                    'QEMU\'s user is in (e.g. libvirt-qemu) and '
                    'memagg-swapd\'s user too, so that memagg-swapd needs '
                    'no privileges. Unset: socket_user\'s group, else '
                    'memagg-swapd\'s own.'),
    cfg.BoolOpt('auto_grant', default=True,
                help='Ask memagg-scheduler for remote memory for a VM that '
                     'is short of memory when this host has none left for '
                     'it. False: grants are made only by the operator.'),
    cfg.FloatOpt('control_timeout', default=10.0, min=0.1,
                 help='Seconds to wait for memagg-swapd\'s answer to one '
                      'control request.'),
    cfg.IntOpt('scheduler_timeout', default=180, min=1,
               help='Seconds memagg-compute waits for memagg-scheduler to '
                    'allocate, release or reclaim remote memory (each '
                    'involves calls to other hosts).'),
    cfg.IntOpt('attach_timeout', default=60, min=1,
               help='Seconds an attach of a grant (export creation and '
                    'hot-plug into the guest) may take.'),
    cfg.IntOpt('reconnect_delay', default=30, min=0, max=3600,
               help='Seconds QEMU holds a VM\'s I/O on its remote-swap disk '
                    'when the NBD connection to memagg-swapd breaks (a '
                    'crash or restart of memagg-swapd) and retries it once '
                    'reconnected: the disk\'s <reconnect delay=\'N\'/> '
                    '(QEMU\'s reconnect-delay). 0: none. A libvirt whose NBD '
                    'disks have no <reconnect> (9.0 has none) drops it: '
                    'memagg-compute then logs a warning, and the VM '
                    'pauses on its swap disk\'s error until memagg-swapd '
                    'serves the disk again. Applies to disks attached '
                    'from then on.'),
    cfg.BoolOpt('encrypt_pages', default=True,
                help='Encrypt and authenticate the pages of this host\'s VMs '
                     'that go to donors (AEGIS-256X2 where the CPU has AES '
                     'instructions, AES-256-GCM elsewhere; a key per grant '
                     'that only this host\'s memagg-swapd holds and that '
                     'follows the VM on live migration): donors and the '
                     'network see ciphertext only, and a page altered on '
                     'either is read from the local copy or fails with an '
                     'I/O error, over either transport. Applies to '
                     'grants attached from then on.'),
    cfg.IntOpt('max_connections', default=256, min=1, max=4096,
               help='Connections memagg-swapd\'s donor port (listen) holds '
                    'at once, each with a thread of its own; one more is '
                    'closed as it is accepted, counted and logged (at most '
                    'one line per peer every 10 s). Each consumer host '
                    'holds one connection per donor: leave room for every '
                    'host that may use this one.'),
    cfg.IntOpt('max_connections_per_peer', default=32, min=1, max=4096,
               help='Connections the donor port holds from one source '
                    'address, within max_connections (at most it), so that '
                    'one host cannot take them all.'),
    cfg.IntOpt('idle_timeout', default=300, min=1, max=86400,
               help='Seconds a connection to the donor port may stay '
                    'silent before any frame of it carried a valid grant '
                    'key; then it is closed. A consumer\'s connection, once '
                    'a frame of it was accepted, may stay idle.'),
    cfg.IntOpt('read_timeout', default=10, min=1, max=3600,
               help='Seconds the rest of a frame (its header and payload, '
                    'up to 32 MiB) may take to reach the donor port once its '
                    'first byte came; a frame cut short closes its '
                    'connection.'),
    cfg.IntOpt('retry_interval', default=60, min=1,
               help='Seconds before a failed request to memagg-scheduler '
                    'for a VM or a donation is tried again; doubles with '
                    'each failure in a row, up to ten times this.'),
]


def register_opts(conf):
    # listen's default names it.
    conf.register_opt(default.my_ip)
    conf.register_group(GROUP)
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
