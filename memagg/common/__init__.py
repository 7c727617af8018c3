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

"""What every service shares: the request context, exceptions, RPC and
notification transports (rpc), the command-line helpers, plug-in loading,
coordination, Keystone sessions, the Guru Meditation Report and retries
(retry: the one way memagg tries a failed call again). May import
memagg.conf only.
"""
