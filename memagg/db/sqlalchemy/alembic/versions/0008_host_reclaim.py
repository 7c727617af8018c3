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

"""Instances and WSS samples keep what host reclaim holds paged out and
the promotion rate; instances also the rate against the WSS, its SLO and
the reclaim mechanism (issue 19).

Revision ID: 0008
Revises: 0007
"""
from alembic import op
import sqlalchemy as sa


revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade():
    # Nullable without a default: rows from before were not reported with
    # them, which NULL says (the API shows null).
    for table in ('instances', 'wss_samples'):
        with op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column('reclaimed_mb', sa.Integer(),
                                       nullable=True))
            batch.add_column(sa.Column('promotion_rate', sa.Double(),
                                       nullable=True))
    with op.batch_alter_table('instances') as batch:
        batch.add_column(sa.Column('promotion_rate_pct', sa.Double(),
                                   nullable=True))
        batch.add_column(sa.Column('promotion_slo', sa.Double(),
                                   nullable=True))
        batch.add_column(sa.Column('reclaim_mechanism', sa.String(255),
                                   nullable=True))
