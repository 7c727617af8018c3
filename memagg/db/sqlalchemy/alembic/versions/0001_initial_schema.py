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

"""Initial schema: services, hosts, instances, WSS samples, grants and slabs,
audits and their actions, migrations.

Revision ID: 0001
Revises: none
"""
from alembic import op
import sqlalchemy as sa


revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def _timestamps():
    """The created_at/updated_at pair every memagg table carries."""
    return [
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.Column('updated_at', sa.DateTime(), nullable=True),
    ]


def upgrade():
    op.create_table(
        'services',
        sa.Column('id', sa.Integer(), primary_key=True),
        sa.Column('host', sa.String(255), nullable=False),
        sa.Column('binary', sa.String(64), nullable=False),
        sa.Column('topic', sa.String(255), nullable=False),
        sa.Column('report_count', sa.Integer(), nullable=False),
        sa.Column('last_seen_at', sa.DateTime(), nullable=True),
        sa.Column('disabled', sa.Boolean(), nullable=False),
        *_timestamps(),
        sa.UniqueConstraint('host', 'binary',
                            name='uniq_services0host0binary'),
    )

    op.create_table(
        'hosts',
        sa.Column('id', sa.Integer(), primary_key=True),
        sa.Column('name', sa.String(255), nullable=False, unique=True),
        sa.Column('memory_mb', sa.Integer(), nullable=False),
        sa.Column('reserved_mb', sa.Integer(), nullable=False),
        sa.Column('vcpus', sa.Integer(), nullable=False),
        sa.Column('cpu_util', sa.Float(), nullable=False),
        sa.Column('free_reservoir_mb', sa.Integer(), nullable=False),
        sa.Column('lendable_mb', sa.Integer(), nullable=False),
        sa.Column('state', sa.String(16), nullable=False),
        sa.Column('reported_at', sa.DateTime(), nullable=True),
        *_timestamps(),
    )

    op.create_table(
        'instances',
        sa.Column('id', sa.Integer(), primary_key=True),
        sa.Column('uuid', sa.String(36), nullable=False, unique=True),
        sa.Column('name', sa.String(255), nullable=False),
        sa.Column('host', sa.String(255), nullable=False),
        sa.Column('project_id', sa.String(255), nullable=True),
        sa.Column('status', sa.String(32), nullable=False),
        sa.Column('booked_mb', sa.Integer(), nullable=False),
        sa.Column('current_mb', sa.Integer(), nullable=False),
        sa.Column('target_mb', sa.Integer(), nullable=True),
        sa.Column('wss_mb', sa.Integer(), nullable=True),
        sa.Column('wss_maxavg_mb', sa.Integer(), nullable=True),
        sa.Column('estimator', sa.String(64), nullable=True),
        sa.Column('cpu_util', sa.Float(), nullable=False),
        sa.Column('remote_mb', sa.Integer(), nullable=False),
        *_timestamps(),
    )
    op.create_index('ix_instances_host', 'instances', ['host'])
    op.create_index('ix_instances_project_id', 'instances', ['project_id'])
    op.create_index('instances_created_at_id_idx', 'instances',
                    ['created_at', 'id'])

    op.create_table(
        'wss_samples',
        # BIGINT autoincrement is not a rowid alias on SQLite; INTEGER is.
        sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'),
                  primary_key=True),
        sa.Column('instance_uuid', sa.String(36), nullable=False),
        sa.Column('host', sa.String(255), nullable=False),
        sa.Column('sampled_at', sa.DateTime(), nullable=False),
        sa.Column('wss_mb', sa.Integer(), nullable=False),
        sa.Column('wss_maxavg_mb', sa.Integer(), nullable=True),
        sa.Column('current_mb', sa.Integer(), nullable=False),
        sa.Column('target_mb', sa.Integer(), nullable=True),
        sa.Column('estimator', sa.String(64), nullable=False),
        *_timestamps(),
    )
    op.create_index('ix_wss_samples_sampled_at', 'wss_samples',
                    ['sampled_at'])
    op.create_index('wss_samples_instance_uuid_sampled_at_idx', 'wss_samples',
                    ['instance_uuid', 'sampled_at'])

    op.create_table(
        'grants',
        sa.Column('id', sa.Integer(), primary_key=True),
        sa.Column('uuid', sa.String(36), nullable=False, unique=True),
        sa.Column('instance_uuid', sa.String(36), nullable=False),
        sa.Column('consumer_host', sa.String(255), nullable=False),
        sa.Column('requested_mb', sa.Integer(), nullable=False),
        sa.Column('granted_mb', sa.Integer(), nullable=False),
        sa.Column('status', sa.String(16), nullable=False),
        sa.Column('secret', sa.String(128), nullable=False),
        *_timestamps(),
    )
    op.create_index('ix_grants_consumer_host', 'grants', ['consumer_host'])
    op.create_index('ix_grants_instance_uuid', 'grants', ['instance_uuid'])

    op.create_table(
        'slabs',
        sa.Column('id', sa.Integer(), primary_key=True),
        sa.Column('grant_id', sa.Integer(),
                  sa.ForeignKey('grants.id', ondelete='CASCADE'),
                  nullable=False),
        sa.Column('index', sa.Integer(), nullable=False),
        sa.Column('donor_host', sa.String(255), nullable=False),
        sa.Column('size_mb', sa.Integer(), nullable=False),
        sa.Column('remote_addr', sa.BigInteger(), nullable=True),
        sa.Column('replica_host', sa.String(255), nullable=True),
        sa.Column('status', sa.String(16), nullable=False),
        *_timestamps(),
        sa.UniqueConstraint('grant_id', 'index',
                            name='uniq_slabs0grant_id0index'),
    )
    op.create_index('ix_slabs_donor_host', 'slabs', ['donor_host'])

    op.create_table(
        'audits',
        sa.Column('id', sa.Integer(), primary_key=True),
        sa.Column('uuid', sa.String(36), nullable=False, unique=True),
        sa.Column('state', sa.String(16), nullable=False),
        sa.Column('memory_basis', sa.String(16), nullable=False),
        sa.Column('parameters', sa.JSON(), nullable=True),
        sa.Column('reason', sa.Text(), nullable=True),
        sa.Column('finished_at', sa.DateTime(), nullable=True),
        *_timestamps(),
    )

    op.create_table(
        'audit_actions',
        sa.Column('id', sa.Integer(), primary_key=True),
        sa.Column('audit_id', sa.Integer(),
                  sa.ForeignKey('audits.id', ondelete='CASCADE'),
                  nullable=False),
        sa.Column('sequence', sa.Integer(), nullable=False),
        sa.Column('action_type', sa.String(32), nullable=False),
        sa.Column('instance_uuid', sa.String(36), nullable=True),
        sa.Column('source_host', sa.String(255), nullable=True),
        sa.Column('dest_host', sa.String(255), nullable=True),
        sa.Column('reason', sa.String(255), nullable=True),
        sa.Column('state', sa.String(16), nullable=False),
        *_timestamps(),
        sa.UniqueConstraint('audit_id', 'sequence',
                            name='uniq_audit_actions0audit_id0sequence'),
    )

    op.create_table(
        'migrations',
        sa.Column('id', sa.Integer(), primary_key=True),
        sa.Column('uuid', sa.String(36), nullable=False, unique=True),
        sa.Column('instance_uuid', sa.String(36), nullable=False),
        sa.Column('source_host', sa.String(255), nullable=False),
        sa.Column('dest_host', sa.String(255), nullable=False),
        sa.Column('status', sa.String(16), nullable=False),
        sa.Column('audit_action_id', sa.Integer(),
                  sa.ForeignKey('audit_actions.id', ondelete='SET NULL'),
                  nullable=True),
        sa.Column('attempts', sa.Integer(), nullable=False),
        sa.Column('bytes_transferred', sa.BigInteger(), nullable=True),
        sa.Column('duration_s', sa.Float(), nullable=True),
        sa.Column('downtime_ms', sa.Float(), nullable=True),
        sa.Column('remote_share', sa.Float(), nullable=True),
        sa.Column('error', sa.Text(), nullable=True),
        *_timestamps(),
    )
    op.create_index('ix_migrations_instance_uuid', 'migrations',
                    ['instance_uuid'])
