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


"""What compute nodes report of the two tiers (issue 38): grants' ledgers
per tier, one row per grant, the newest report's; instances' L1
allocations by their host's tier policy.

Revision ID: 0010
Revises: 0009
"""
from alembic import op
import sqlalchemy as sa


revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None

_COUNTS = ('puts', 'gets', 'flushes', 'moved_in', 'moved_out', 'evicts',
           'used')


def upgrade():
    op.create_table(
        'grant_ledgers',
        sa.Column('id', sa.Integer(), primary_key=True),
        sa.Column('grant_uuid', sa.String(36), nullable=False, unique=True),
        sa.Column('host', sa.String(255), nullable=False),
        sa.Column('reported_at', sa.DateTime(), nullable=False),
        *(sa.Column('%s_%s' % (tier, count), sa.BigInteger(),
                    nullable=False)
          for tier in ('l1', 'l2') for count in _COUNTS),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.Column('updated_at', sa.DateTime(), nullable=True),
    )
    # Nullable without a default: NULL until the host's tier policy plans.
    with op.batch_alter_table('instances') as batch:
        batch.add_column(sa.Column('l1_share_mb', sa.Integer(),
                                   nullable=True))
