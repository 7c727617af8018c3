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


"""Grants' secrets are stored wrapped (memagg.db.secret_box), longer than
the clear 64 hex digits: the column grows to 255 characters.

The clear values already stored are wrapped by "memagg-manage
grant_secrets rewrap", which reads the key file; a migration does not.

Revision ID: 0009
Revises: 0008
"""
from alembic import op
import sqlalchemy as sa


revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('grants') as batch:
        batch.alter_column('secret', existing_type=sa.String(128),
                           type_=sa.String(255), existing_nullable=False)
