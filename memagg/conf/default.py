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

"""Options of the [DEFAULT] group shared by every memagg process."""
import socket

from oslo_config import cfg
from oslo_utils import netutils

#: This host's management address; [swapd] listen defaults to it, so it is
#: registered with the [swapd] options too (memagg.conf.swapd).
my_ip = cfg.HostAddressOpt(
    'my_ip', default=netutils.get_my_ipv4(), sample_default='<host_ipv4>',
    help='This host\'s address on the management network, where other '
         'hosts reach it: memagg-swapd takes donor connections there '
         '([swapd] listen). Default: the address of the interface of the '
         'default route.')

opts = [
    my_ip,
    cfg.StrOpt('host', default=socket.gethostname(),
               sample_default='<hostname>',
               help='Name of this host as memagg and Nova know it. It is '
                    'the RPC server name of memagg-compute on this node.'),
    cfg.IntOpt('report_interval', default=10, min=1,
               help='Seconds between two heartbeats a service writes.'),
    cfg.IntOpt('service_down_time', default=60, min=1,
               help='A service whose last heartbeat is older than this many '
                    'seconds is reported down.'),
    cfg.StrOpt('state_path', default='/var/lib/memagg',
               help='Directory for memagg state (SQLite file in all-in-one '
                    'mode, sockets).'),
]


def register_opts(conf):
    conf.register_opts(opts)


def list_opts():
    return {'DEFAULT': opts}
