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

"""The states of audits, their actions, migrations and hosts as memagg's
scheduler moves them (the values of their state and status columns)."""

# audits.state
PLANNING = 'planning'
RECOMMENDED = 'recommended'
EXECUTING = 'executing'
# audits.state, audit_actions.state and migrations.status
SUCCEEDED = 'succeeded'
FAILED = 'failed'
# audits.state: some actions succeeded, others did not
PARTIAL = 'partial'
# audit_actions.state
PENDING = 'pending'
RUNNING = 'running'
SKIPPED = 'skipped'
# migrations.status (with running, succeeded, failed)
QUEUED = 'queued'
# hosts.state
ACTIVE = 'active'
STANDBY = 'standby'

ACTION_FINAL_STATES = (SUCCEEDED, FAILED, SKIPPED)
