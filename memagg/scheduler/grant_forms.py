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

"""How memagg-scheduler shows and checks grants: the form the RPC API
returns them in, a size as the API and RPC take it, a grant's slabs by
donor, a donor's reply to prepare_slabs, and what a host's failed call
says. Shared by the reservoir (memagg.scheduler.reservoir), the return of
lent memory (grant_returns), grants following their VM (grant_moves) and
slabs moving between the tiers (tier_moves).
"""
import oslo_messaging as messaging

from memagg.common import exceptions
from memagg.db import grants as db_grants


def remote_reason(exc):
    """One line of why a call to a host failed: a remote error's type and
    message, not its traceback."""
    if isinstance(exc, messaging.RemoteError):
        return '%s: %s' % (exc.exc_type, exc.value)
    return str(exc)


def refused(exc):
    """Whether a host answered a call with Conflict: it refused, rather
    than failed to answer."""
    return isinstance(exc, exceptions.Conflict) or (
        isinstance(exc, messaging.RemoteError) and exc.exc_type == 'Conflict')


def grant_dict(grant):
    """The grant as the RPC API returns it (with its secret)."""
    return dict(
        uuid=grant.uuid, instance_uuid=grant.instance_uuid,
        consumer_host=grant.consumer_host, requested_mb=grant.requested_mb,
        granted_mb=grant.granted_mb, partial=grant.partial,
        reason=grant.reason, status=grant.status, secret=grant.secret,
        slab_size_mb=grant.slab_size_mb,
        slabs=[dict(index=s.index, donor_host=s.donor_host,
                    endpoint=s.endpoint, remote_addr=s.remote_addr,
                    rkey=s.rkey, size_mb=s.size_mb, status=s.status)
               for s in grant.slabs])


def check_size(size_mb):
    """InvalidParameter naming size_mb unless it is a whole number of MiB,
    1 or more."""
    if isinstance(size_mb, bool) or not isinstance(size_mb, int) \
            or size_mb < 1:
        raise exceptions.InvalidParameter(
            field='size_mb', reason='got %r: give a whole number of MiB, '
                                    '1 or more' % (size_mb,))


def by_donor(slabs):
    """``{donor: [index, ...]}`` of those of ``slabs`` (rows) that hold a
    donor's memory, donors in the order of their first slab."""
    result = {}
    for slab in slabs:
        if slab.status in db_grants.SLAB_HOLDING:
            result.setdefault(slab.donor_host, []).append(slab.index)
    return result


def prepared_slabs(reply, indexes):
    """``{index: (endpoint, remote_addr, rkey)}`` from a prepare_slabs
    reply, keeping only slabs that were asked for; ValueError when the
    reply does not follow the contract."""
    try:
        endpoint = reply['endpoint']
        slabs = reply['slabs']
        result = {}
        for slab in slabs:
            index = int(slab['index'])
            if index in indexes:
                result[index] = (str(endpoint), int(slab['remote_addr']),
                                 int(slab['rkey']))
        return result
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError('malformed prepare_slabs reply %r: %s' % (
            reply, exc))
