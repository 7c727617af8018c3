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


"""The room a compute node reports for new grants' local copies (issue 38,
a local tier that fills): hosts.local_room_mb.

Revision ID: 0011
Revises: 0010
"""
from alembic import op
import sqlalchemy as sa


revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None


def upgrade():
    # Nullable without a default: NULL (not known) until the host reports.
    with op.batch_alter_table('hosts') as batch:
        batch.add_column(sa.Column('local_room_mb', sa.Integer(),
                                   nullable=True))
