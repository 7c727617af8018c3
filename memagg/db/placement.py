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

"""The compute nodes whose Placement MEMORY_MB allocation_ratio memagg sets
(memagg.scheduler.placement), with the operator's own ratio.
"""
import sqlalchemy as sa

from memagg.common import exceptions
from memagg.db import facade
from memagg.db.sqlalchemy import models


def placement_inventories(context):
    """Every PlacementInventory row, by host."""
    with facade.reader().using(context) as session:
        return session.query(models.PlacementInventory).order_by(
            models.PlacementInventory.host).all()


@facade.retry_on_race
def placement_inventory_take(context, host, original_allocation_ratio):
    """Record that memagg is about to set ``host``'s ratio, which the
    operator had at ``original_allocation_ratio``; a row already there is
    kept as it is (its original stays). Returns the row."""
    with facade.writer().using(context) as session:
        row = session.query(models.PlacementInventory).filter_by(
            host=host).first()
        if row is None:
            row = models.PlacementInventory(
                host=host,
                original_allocation_ratio=original_allocation_ratio)
            session.add(row)
            session.flush()
        return row


@facade.retry_on_race
def placement_inventory_applied(context, host, allocation_ratio):
    """Record the ratio memagg wrote for ``host``; NotFound without a
    row."""
    with facade.writer().using(context) as session:
        row = session.query(models.PlacementInventory).filter_by(
            host=host).with_for_update().first()
        if row is None:
            raise exceptions.NotFound(resource='Placement inventory',
                                      id=host)
        row.applied_allocation_ratio = allocation_ratio
        return row


def placement_inventory_release(context, host):
    """Forget ``host`` (its operator's ratio is back, or it is gone from
    Placement); nothing when there is no row."""
    with facade.writer().using(context) as session:
        session.execute(sa.delete(models.PlacementInventory).where(
            models.PlacementInventory.host == host))
