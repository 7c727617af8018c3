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

"""GET /v1/reservoir: what the hosts lend and borrow."""


def test_reservoir(api):
    reservoir = api.get('/v1/reservoir').json['reservoir']
    assert reservoir['lendable_mb'] == 4096
    assert reservoir['lent_mb'] == 512 and reservoir['borrowed_mb'] == 512
    assert {h['host']: h['lent_mb'] for h in reservoir['hosts']} == {
        'host-1': 0, 'host-2': 512}
