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

"""memagg's default policies, in code: one module per resource.
It imports oslo.policy only, nothing else of memagg.
"""
import itertools

from memagg.api.policies import audits
from memagg.api.policies import base
from memagg.api.policies import cloud_usage
from memagg.api.policies import grants
from memagg.api.policies import host_usages
from memagg.api.policies import hosts
from memagg.api.policies import instances
from memagg.api.policies import migrations
from memagg.api.policies import reservoir
from memagg.api.policies import services


def list_rules():
    """Every default rule (oslo.policy.policies entry point)."""
    return list(itertools.chain(
        base.list_rules(), services.list_rules(), hosts.list_rules(),
        instances.list_rules(), reservoir.list_rules(), grants.list_rules(),
        audits.list_rules(), migrations.list_rules(),
        host_usages.list_rules(), cloud_usage.list_rules()))
