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

"""The keys that wrap grants' stored secrets (memagg.db.secret_box): how
many each wraps, and the rewrap under the current key
(``memagg-manage grant-secrets rewrap``, ``memagg-status``)."""
import sqlalchemy as sa

from memagg.db import facade
from memagg.db import secret_box
from memagg.db.sqlalchemy import models


def grant_secret_key_ids(context):
    """How many stored grant secrets each key wraps: ``{key id: count}``,
    the key id None counting those stored in clear."""
    column = models.Grant.wrapped_secret
    key_id = sa.case((column.like(secret_box.PREFIX + '%'), sa.func.substr(
        column, len(secret_box.PREFIX) + 1, secret_box.KEY_ID_CHARS)),
        else_=None)
    with facade.reader().using(context) as session:
        return dict(session.query(key_id, sa.func.count()).group_by(
            key_id).all())


def grant_secrets_rewrap(context, old_keys, batch_size=100):
    """Wrap with the current key ([database] secret_key_file) every stored
    grant secret that is not under it: those under one of ``old_keys``
    (secret_box.Key) and those stored in clear before secrets were
    wrapped. ``batch_size`` grants per transaction, in id order; a value
    already under the current key is left, so a second run changes
    nothing, and one that changed meanwhile is left for the next run.

    Returns a dict: ``rewrapped`` (from an old key), ``wrapped`` (clear
    before), ``current`` (left as they were) and ``failed``, ``[(grant
    uuid, why)]`` for the values no key given opens (another key, or
    altered). Raises secret_box.KeyFileError when the current key cannot
    be read.
    """
    current = secret_box.current_key()
    keys = [current] + list(old_keys)
    result = dict(rewrapped=0, wrapped=0, current=0, failed=[])
    last_id = 0
    while True:
        with facade.writer().using(context) as session:
            batch = session.query(
                models.Grant.id, models.Grant.uuid,
                models.Grant.wrapped_secret).filter(
                models.Grant.id > last_id).order_by(
                models.Grant.id).limit(batch_size).all()
            for grant_id, uuid, stored in batch:
                kind = _rewrap_one(session, current, keys, grant_id, uuid,
                                   stored, result['failed'])
                if kind:
                    result[kind] += 1
        if len(batch) < batch_size:
            return result
        last_id = batch[-1][0]


def _rewrap_one(session, current, keys, grant_id, uuid, stored, failed):
    """Store grant ``grant_id``'s secret under ``current`` unless it is
    already; the kind of value it was (a key of grant_secrets_rewrap's
    result), or None when it failed or changed meanwhile."""
    key_id = secret_box.key_id_of(stored)
    if key_id == current.key_id:
        return 'current'
    try:
        clear = (secret_box.unwrap(stored, uuid, keys) if key_id
                 else stored)
    except secret_box.SecretUnavailable as error:
        failed.append((uuid, str(error)))
        return None
    # Conditional: a value another run rewrapped meanwhile stays.
    wrapped = secret_box.wrap(clear, uuid, current)
    changed = session.execute(sa.update(models.Grant).where(
        models.Grant.id == grant_id,
        models.Grant.wrapped_secret == stored).values(
        wrapped_secret=wrapped).execution_options(
        synchronize_session=False)).rowcount
    if not changed:
        return None
    return 'rewrapped' if key_id else 'wrapped'
