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

"""Wait for memagg's asynchronous work, the tempest way: read the object
every ``client.build_interval`` seconds until it is ready or
``client.build_timeout`` ([memagg] build_timeout) has passed."""
from tempest.lib.common.utils import test_utils
from tempest.lib import exceptions as lib_exc

#: States an audit that is never executed ends in.
PLANNED = ('recommended', 'failed')


def wait_for_audit_state(client, uuid, states=PLANNED):
    """Wait until audit ``uuid`` is in one of ``states``; return it (as
    GET /v1/audits/{uuid} shows it). Raises TimeoutException naming the
    state it was left in."""
    seen = {}

    def settled():
        seen['audit'] = client.show_audit(uuid)['audit']
        return seen['audit']['state'] in states

    if not test_utils.call_until_true(settled, client.build_timeout,
                                      client.build_interval):
        raise lib_exc.TimeoutException(
            'audit %s is still %s after %s s; expected one of %s'
            % (uuid, seen['audit']['state'], client.build_timeout,
               ', '.join(states)))
    return seen['audit']
