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

"""The global memory reservoir: a grant's slab size, whether it is partial
and why; a slab's data-path endpoint and key.

Revision ID: 0003
Revises: 0002
"""
from alembic import op
import sqlalchemy as sa


revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade():
    # Grants stored before this revision were made with the default slab.
    op.add_column('grants', sa.Column('slab_size_mb', sa.Integer(),
                                      nullable=False, server_default='64'))
    op.add_column('grants', sa.Column('partial', sa.Boolean(),
                                      nullable=False, server_default='0'))
    op.add_column('grants', sa.Column('reason', sa.Text(), nullable=True))
    op.add_column('slabs', sa.Column('endpoint', sa.String(255),
                                     nullable=True))
    op.add_column('slabs', sa.Column('rkey', sa.BigInteger(),
                                     nullable=True))
