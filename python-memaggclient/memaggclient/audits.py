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

"""/v1/audits: consolidation rounds and their action plans."""
from memaggclient import base

_SINCE = (1, 2)


class AuditManager(base.Manager):
    """``client.audits``."""

    def list(self, limit=None, marker=None, sort_key=None, sort_dir=None,
             state=None, since=None, until=None):
        """One page of audits (a base.Page), those in ``state`` and
        created in [``since``, ``until``] (ISO 8601 strings or datetimes)
        when given.

        ``limit`` is the page size (the API's default when None),
        ``marker`` the uuid of the last audit of the previous page,
        ``sort_key`` and ``sort_dir`` (asc, desc) the order.
        """
        return self._page('/v1/audits', 'audits', limit, marker, sort_key,
                          sort_dir, state=state, since=since, until=until)

    def get(self, uuid):
        """The audit ``uuid`` as a dict, with its ordered ``actions``."""
        return self._get('/v1/audits/%s' % base.quote(uuid), 'audit')

    def create(self, memory_basis=None, auto_execute=None, parameters=None):
        """Start a consolidation round; return the audit (pending).

        ``memory_basis`` is wss or booked, ``auto_execute`` whether to
        execute the plan once made, ``parameters`` a dict of
        ``[consolidation]`` overrides; the server's defaults when None.
        Microversion 1.2.
        """
        self._http.require(_SINCE, 'creating an audit')
        body = {k: v for k, v in (('memory_basis', memory_basis),
                                  ('auto_execute', auto_execute),
                                  ('parameters', parameters))
                if v is not None}
        return self._http.request('POST', '/v1/audits', json=body)['audit']

    def execute(self, uuid):
        """Execute the recommended audit ``uuid``'s plan; return the audit.
        Microversion 1.2."""
        self._http.require(_SINCE, 'executing an audit')
        return self._http.request(
            'POST', '/v1/audits/%s/execute' % base.quote(uuid),
            json={})['audit']
