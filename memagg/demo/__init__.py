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

"""memagg's tiny guest and the demo cloud of them that ``memagg-aio
--demo`` boots: a Debian cloud kernel and a busybox initramfs (image/)
whose init runs a workload with a hot set its driver sets (guest), the
guests and their workloads (cloud), the Keystone the demo's API checks
tokens with (keystone), the Horizon it serves memagg's panels with
(horizon), how both processes are stopped (server), and the swap file
host reclaim needs on a host without swap (swap). The tests use the same.

May import conf, common and drivers; cmd imports it.
"""
