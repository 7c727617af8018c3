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

"""memagg-scheduler, the global manager: the reports it receives
(report_listener), consolidation rounds and their audits (consolidation,
audits), the global memory reservoir and its grants (reservoir,
grant_moves), the execution of plans (migration; live_migration for
each migration, states for what they move through) and Placement
(placement); manager serves its RPC API, rpcapi is its client. May import
conf, common, db, drivers, objects, notifications, service and compute
(memagg.compute.rpcapi to call the nodes).
"""
