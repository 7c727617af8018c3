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

# Project → Compute → Memory: the user's own instances' working sets.
from memaggclient import exceptions

PANEL = 'memory'
PANEL_DASHBOARD = 'project'
PANEL_GROUP = 'compute'
ADD_PANEL = 'memagg.dashboard.project_memory.panel.Memory'
# Once for both panels: Horizon adds every file's apps, and a second
# entry would be a duplicate Django application.
ADD_INSTALLED_APPS = ['memagg.dashboard']
# Horizon's error handling: a 401 logs the user out, a 404 and any other
# failure of memagg's client show an error message.
ADD_EXCEPTIONS = {
    'unauthorized': (exceptions.Unauthorized,),
    'not_found': (exceptions.NotFound,),
    'recoverable': (exceptions.ClientException,),
}
