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

"""Consolidation rounds: VM vCPUs and CPU samples, host utilisation samples,
an audit's auto-execution flag and what its plan could not place.

Revision ID: 0002
Revises: 0001
"""
from alembic import op
import sqlalchemy as sa


revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade():
    # Existing rows get a value through the server default.
    op.add_column('instances', sa.Column('vcpus', sa.Integer(),
                                         nullable=False, server_default='0'))
    op.add_column('wss_samples', sa.Column('cpu_util', sa.Float(),
                                           nullable=True))

    op.create_table(
        'host_samples',
        # BIGINT autoincrement is not a rowid alias on SQLite; INTEGER is.
        sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'),
                  primary_key=True),
        sa.Column('host', sa.String(255), nullable=False),
        sa.Column('sampled_at', sa.DateTime(), nullable=False),
        sa.Column('cpu_util', sa.Float(), nullable=False),
        sa.Column('mem_used_mb', sa.Integer(), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.Column('updated_at', sa.DateTime(), nullable=True),
    )
    op.create_index('ix_host_samples_sampled_at', 'host_samples',
                    ['sampled_at'])
    op.create_index('host_samples_host_sampled_at_idx', 'host_samples',
                    ['host', 'sampled_at'])

    op.add_column('audits', sa.Column('auto_execute', sa.Boolean(),
                                      nullable=False,
                                      server_default='0'))
    op.add_column('audits', sa.Column('unplaced', sa.JSON(), nullable=True))
