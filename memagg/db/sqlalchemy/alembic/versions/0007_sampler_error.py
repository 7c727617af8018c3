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

"""Instances and WSS samples keep the sampler's backend, error, pages and
whether the estimate was warming.

Revision ID: 0007
Revises: 0006
"""
from alembic import op
import sqlalchemy as sa


revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade():
    for table in ('instances', 'wss_samples'):
        with op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column('sampler_backend', sa.String(32),
                                       nullable=True))
            batch.add_column(sa.Column('sampler_error_mb', sa.Double(),
                                       nullable=True))
            batch.add_column(sa.Column('sampler_pages', sa.Integer(),
                                       nullable=True))
            # Rows from before were not warming: the server default says
            # so for them.
            batch.add_column(sa.Column('warming', sa.Boolean(),
                                       nullable=False, server_default='0'))
