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

"""The ``none`` compute API driver: no Nova, so no VM names a weight and
no plan can be executed.

The default: memagg-aio and nodes outside an OpenStack cloud run without a
compute service, and every VM gets [local_policy] default_weight. Every
call that would act on the cloud (live migration, enabling a host) raises
ComputeApiUnavailable saying to set [compute] compute_api_driver = nova.
"""
from memagg.drivers.compute_api import base


class NoComputeApi(base.ComputeApi):
    """Knows no VM's weight and reaches no compute service."""

    name = 'none'
