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

"""memagg-compute, the local manager on each compute node: the collection
period (collector, memory), the native sampler's set-up (sampling), host
reclaim (reclaim), remote memory (remote, with its period's plan
remote_plan, the grants it holds remote_grants, the scheduler's calls on
its exports remote_exports and the back-off of its requests backoff;
swapd: memagg-swapd's control socket) and the RPC API it serves (manager;
rpcapi is its client). May import conf, common, drivers, objects and
service, and the scheduler only through memagg.scheduler.rpcapi.
"""
