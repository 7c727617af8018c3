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

"""The installed memagg version, from pbr."""
import pbr.version

version_info = pbr.version.VersionInfo('memagg')


# What a Guru Meditation Report's "Package" section shows (oslo.reports
# asks the object it is given for these three).
def vendor_string():
    """The vendor of this build."""
    return 'OpenStack Foundation'


def product_string():
    """The product's name."""
    return 'memagg'


def version_string_with_package():
    """The installed version."""
    return version_info.version_string()
