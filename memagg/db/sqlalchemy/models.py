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

"""SQLAlchemy models of memagg's database.

The alembic migrations under ``alembic/versions`` create exactly these tables;
a test compares the two on SQLite, MariaDB and PostgreSQL.
"""
import datetime

from oslo_utils import timeutils
import sqlalchemy as sa
from sqlalchemy import orm

from memagg.db import secret_box


def _now():
    return timeutils.utcnow()


class Base(orm.DeclarativeBase):
    """Declarative base: created_at/updated_at columns on every table."""

    created_at: orm.Mapped[datetime.datetime] = orm.mapped_column(
        sa.DateTime, nullable=False, default=_now)
    updated_at: orm.Mapped[datetime.datetime | None] = orm.mapped_column(
        sa.DateTime, nullable=True, onupdate=_now)

    def to_dict(self):
        """Return the row's columns as a plain dict."""
        return {c.key: getattr(self, c.key) for c in self.__table__.columns}


class Service(Base):
    """A running memagg process and its last heartbeat."""

    __tablename__ = 'services'
    __table_args__ = (sa.UniqueConstraint('host', 'binary',
                                          name='uniq_services0host0binary'),)

    id: orm.Mapped[int] = orm.mapped_column(sa.Integer, primary_key=True)
    host: orm.Mapped[str] = orm.mapped_column(sa.String(255), nullable=False)
    binary: orm.Mapped[str] = orm.mapped_column(sa.String(64), nullable=False)
    topic: orm.Mapped[str] = orm.mapped_column(sa.String(255), nullable=False)
    report_count: orm.Mapped[int] = orm.mapped_column(
        sa.Integer, nullable=False, default=0)
    last_seen_at: orm.Mapped[datetime.datetime | None] = orm.mapped_column(
        sa.DateTime, nullable=True)
    disabled: orm.Mapped[bool] = orm.mapped_column(
        sa.Boolean, nullable=False, default=False)


class Host(Base):
    """A compute node as memagg-compute last reported it."""

    __tablename__ = 'hosts'

    id: orm.Mapped[int] = orm.mapped_column(sa.Integer, primary_key=True)
    name: orm.Mapped[str] = orm.mapped_column(
        sa.String(255), nullable=False, unique=True)
    memory_mb: orm.Mapped[int] = orm.mapped_column(
        sa.Integer, nullable=False, default=0)
    reserved_mb: orm.Mapped[int] = orm.mapped_column(
        sa.Integer, nullable=False, default=0)
    vcpus: orm.Mapped[int] = orm.mapped_column(
        sa.Integer, nullable=False, default=0)
    cpu_util: orm.Mapped[float] = orm.mapped_column(
        sa.Float, nullable=False, default=0.0)
    free_reservoir_mb: orm.Mapped[int] = orm.mapped_column(
        sa.Integer, nullable=False, default=0)
    lendable_mb: orm.Mapped[int] = orm.mapped_column(
        sa.Integer, nullable=False, default=0)
    # MiB the filesystem of its local copies can take for new grants
    # (memagg.compute.remote.RemoteMemory.local_room_mb); NULL: not known
    # (a sender from before, or no memagg-swapd).
    local_room_mb: orm.Mapped[int | None] = orm.mapped_column(
        sa.Integer, nullable=True)
    # 'active', or 'standby' once a plan powered it off: rounds count a
    # standby host as one they may wake.
    state: orm.Mapped[str] = orm.mapped_column(
        sa.String(16), nullable=False, default='active')
    reported_at: orm.Mapped[datetime.datetime | None] = orm.mapped_column(
        sa.DateTime, nullable=True)


class SamplerWindow:
    """The native sampler's window behind an estimate (wss_mb): its kernel
    interface, the half-width of its confidence interval (MiB; a double,
    as MariaDB's FLOAT would show 0.8 as 0.800000011920929), its pages,
    and whether the estimate was kept out of wss_maxavg_mb (warming)."""

    sampler_backend: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(32), nullable=True)
    sampler_error_mb: orm.Mapped[float | None] = orm.mapped_column(
        sa.Double, nullable=True)
    sampler_pages: orm.Mapped[int | None] = orm.mapped_column(
        sa.Integer, nullable=True)
    warming: orm.Mapped[bool] = orm.mapped_column(
        sa.Boolean, nullable=False, default=False, server_default='0')


class Reclaimed:
    """Host-side reclaim behind a period (issue 19): MiB of guest RAM host
    reclaim holds paged out and the promotion rate (pages faulted back
    per minute; a double, as sampler_error_mb). NULL: not reported (a
    compute node from before)."""

    reclaimed_mb: orm.Mapped[int | None] = orm.mapped_column(
        sa.Integer, nullable=True)
    promotion_rate: orm.Mapped[float | None] = orm.mapped_column(
        sa.Double, nullable=True)


class Instance(SamplerWindow, Reclaimed, Base):
    """A VM on a compute node, with its memory sizes and current WSS."""

    __tablename__ = 'instances'
    # The API lists instances by creation time by default; this index serves
    # that order and its keyset pages without sorting the table.
    __table_args__ = (sa.Index('instances_created_at_id_idx',
                               'created_at', 'id'),)

    id: orm.Mapped[int] = orm.mapped_column(sa.Integer, primary_key=True)
    uuid: orm.Mapped[str] = orm.mapped_column(
        sa.String(36), nullable=False, unique=True)
    name: orm.Mapped[str] = orm.mapped_column(
        sa.String(255), nullable=False, default='')
    host: orm.Mapped[str] = orm.mapped_column(
        sa.String(255), nullable=False, index=True)
    project_id: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(255), nullable=True, index=True)
    status: orm.Mapped[str] = orm.mapped_column(
        sa.String(32), nullable=False, default='active')
    booked_mb: orm.Mapped[int] = orm.mapped_column(
        sa.Integer, nullable=False, default=0)
    current_mb: orm.Mapped[int] = orm.mapped_column(
        sa.Integer, nullable=False, default=0)
    target_mb: orm.Mapped[int | None] = orm.mapped_column(
        sa.Integer, nullable=True)
    wss_mb: orm.Mapped[int | None] = orm.mapped_column(
        sa.Integer, nullable=True)
    wss_maxavg_mb: orm.Mapped[int | None] = orm.mapped_column(
        sa.Integer, nullable=True)
    estimator: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(64), nullable=True)
    local_policy: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(64), nullable=True)
    cpu_util: orm.Mapped[float] = orm.mapped_column(
        sa.Float, nullable=False, default=0.0)
    remote_mb: orm.Mapped[int] = orm.mapped_column(
        sa.Integer, nullable=False, default=0)
    vcpus: orm.Mapped[int] = orm.mapped_column(
        sa.Integer, nullable=False, default=0, server_default='0')
    # The promotion rate as a percentage of wss_maxavg_mb per minute, the
    # SLO it is held to (pages per minute) and the reclaim mechanism
    # ('madvise', 'memcg', 'none', with ': <reason>' when idle).
    promotion_rate_pct: orm.Mapped[float | None] = orm.mapped_column(
        sa.Double, nullable=True)
    promotion_slo: orm.Mapped[float | None] = orm.mapped_column(
        sa.Double, nullable=True)
    reclaim_mechanism: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(255), nullable=True)
    # Its L1 allocation by its host's tier policy (MiB; NULL: none
    # planned): memagg-scheduler reclaims from the VMs most over theirs.
    l1_share_mb: orm.Mapped[int | None] = orm.mapped_column(
        sa.Integer, nullable=True)


class WssSample(SamplerWindow, Reclaimed, Base):
    """One period's working-set estimate of one instance."""

    __tablename__ = 'wss_samples'
    __table_args__ = (sa.Index('wss_samples_instance_uuid_sampled_at_idx',
                               'instance_uuid', 'sampled_at'),)

    id: orm.Mapped[int] = orm.mapped_column(sa.BigInteger().with_variant(
        sa.Integer, 'sqlite'), primary_key=True)
    instance_uuid: orm.Mapped[str] = orm.mapped_column(
        sa.String(36), nullable=False)
    host: orm.Mapped[str] = orm.mapped_column(sa.String(255), nullable=False)
    sampled_at: orm.Mapped[datetime.datetime] = orm.mapped_column(
        sa.DateTime, nullable=False, index=True)
    wss_mb: orm.Mapped[int] = orm.mapped_column(sa.Integer, nullable=False)
    wss_maxavg_mb: orm.Mapped[int | None] = orm.mapped_column(
        sa.Integer, nullable=True)
    current_mb: orm.Mapped[int] = orm.mapped_column(
        sa.Integer, nullable=False)
    target_mb: orm.Mapped[int | None] = orm.mapped_column(
        sa.Integer, nullable=True)
    estimator: orm.Mapped[str] = orm.mapped_column(
        sa.String(64), nullable=False)
    # The VM's CPU use over the period, in cores (host cpu units).
    cpu_util: orm.Mapped[float | None] = orm.mapped_column(
        sa.Float, nullable=True)


class HostSample(Base):
    """One period's utilisation of one compute host, as consolidation
    rounds read it: ``cpu_util`` is the fraction (0..1) of the host's CPUs
    in use, ``mem_used_mb`` the sum of its VMs' WSS max-average."""

    __tablename__ = 'host_samples'
    __table_args__ = (sa.Index('host_samples_host_sampled_at_idx',
                               'host', 'sampled_at'),)

    id: orm.Mapped[int] = orm.mapped_column(sa.BigInteger().with_variant(
        sa.Integer, 'sqlite'), primary_key=True)
    host: orm.Mapped[str] = orm.mapped_column(sa.String(255), nullable=False)
    sampled_at: orm.Mapped[datetime.datetime] = orm.mapped_column(
        sa.DateTime, nullable=False, index=True)
    cpu_util: orm.Mapped[float] = orm.mapped_column(sa.Float, nullable=False)
    mem_used_mb: orm.Mapped[int] = orm.mapped_column(
        sa.Integer, nullable=False)


class Grant(Base):
    """Remote memory lent to one instance, as a fixed set of slabs."""

    __tablename__ = 'grants'

    id: orm.Mapped[int] = orm.mapped_column(sa.Integer, primary_key=True)
    uuid: orm.Mapped[str] = orm.mapped_column(
        sa.String(36), nullable=False, unique=True)
    instance_uuid: orm.Mapped[str] = orm.mapped_column(
        sa.String(36), nullable=False, index=True)
    consumer_host: orm.Mapped[str] = orm.mapped_column(
        sa.String(255), nullable=False, index=True)
    requested_mb: orm.Mapped[int] = orm.mapped_column(
        sa.Integer, nullable=False)
    granted_mb: orm.Mapped[int] = orm.mapped_column(
        sa.Integer, nullable=False, default=0)
    # pending (being set up), active, releasing (a release was accepted;
    # memagg-scheduler frees its slabs), released or failed.
    status: orm.Mapped[str] = orm.mapped_column(
        sa.String(16), nullable=False, default='pending')
    # The grant's data-path key as stored, wrapped by memagg.db.secret_box
    # (the column keeps its name, "secret"); ``secret`` below is the clear
    # key. Never returned by the API.
    wrapped_secret: orm.Mapped[str] = orm.mapped_column(
        'secret', sa.String(255), nullable=False)
    slab_size_mb: orm.Mapped[int] = orm.mapped_column(
        sa.Integer, nullable=False, default=64, server_default='64')
    # Whether less than requested was granted; ``reason`` says why (and
    # why a failed grant failed).
    partial: orm.Mapped[bool] = orm.mapped_column(
        sa.Boolean, nullable=False, default=False, server_default='0')
    reason: orm.Mapped[str | None] = orm.mapped_column(
        sa.Text, nullable=True)
    slabs: orm.Mapped[list['Slab']] = orm.relationship(
        back_populates='grant', order_by='Slab.index',
        cascade='all, delete-orphan', lazy='selectin')
    # Written by report ingestion only (memagg.db.reports), never through
    # the grant.
    ledger: orm.Mapped['GrantLedger | None'] = orm.relationship(
        primaryjoin='Grant.uuid == foreign(GrantLedger.grant_uuid)',
        viewonly=True, uselist=False, lazy='selectin')

    @property
    def secret(self):
        """The clear data-path key, unwrapped with [database]
        secret_key_file; raises secret_box.SecretUnavailable (its
        ClearSecret for one stored in clear) when it cannot be."""
        return secret_box.unwrap(self.wrapped_secret, self.uuid)

    @secret.setter
    def secret(self, value):
        # The uuid is the wrapping's associated data: it must come first.
        if self.uuid is None:
            raise ValueError("set a grant's uuid before its secret")
        self.wrapped_secret = secret_box.wrap(value, self.uuid)


def _count():
    # Pages over a grant's life: past 2**31 on a busy VM.
    return orm.mapped_column(sa.BigInteger, nullable=False, default=0)


class GrantLedger(Base):
    """A grant's ledger as its consumer host last reported it: what
    memagg-swapd counted for its export, per tier (l1_*: slabs on donors,
    l2_*: in the consumer's local copy only), in 4 KiB pages: the pages
    first written there (puts), read (gets), discarded (flushes), moved in
    and out by demotions and promotions, dropped (evicts), and held
    (used)."""

    __tablename__ = 'grant_ledgers'

    id: orm.Mapped[int] = orm.mapped_column(sa.Integer, primary_key=True)
    grant_uuid: orm.Mapped[str] = orm.mapped_column(
        sa.String(36), nullable=False, unique=True)
    host: orm.Mapped[str] = orm.mapped_column(sa.String(255),
                                              nullable=False)
    reported_at: orm.Mapped[datetime.datetime] = orm.mapped_column(
        sa.DateTime, nullable=False)
    l1_puts: orm.Mapped[int] = _count()
    l1_gets: orm.Mapped[int] = _count()
    l1_flushes: orm.Mapped[int] = _count()
    l1_moved_in: orm.Mapped[int] = _count()
    l1_moved_out: orm.Mapped[int] = _count()
    l1_evicts: orm.Mapped[int] = _count()
    l1_used: orm.Mapped[int] = _count()
    l2_puts: orm.Mapped[int] = _count()
    l2_gets: orm.Mapped[int] = _count()
    l2_flushes: orm.Mapped[int] = _count()
    l2_moved_in: orm.Mapped[int] = _count()
    l2_moved_out: orm.Mapped[int] = _count()
    l2_evicts: orm.Mapped[int] = _count()
    l2_used: orm.Mapped[int] = _count()


class Slab(Base):
    """One fixed-size piece of a grant, held in a donor host's RAM."""

    __tablename__ = 'slabs'
    __table_args__ = (sa.UniqueConstraint('grant_id', 'index',
                                          name='uniq_slabs0grant_id0index'),)

    id: orm.Mapped[int] = orm.mapped_column(sa.Integer, primary_key=True)
    grant_id: orm.Mapped[int] = orm.mapped_column(
        sa.ForeignKey('grants.id', ondelete='CASCADE'), nullable=False)
    index: orm.Mapped[int] = orm.mapped_column(sa.Integer, nullable=False)
    donor_host: orm.Mapped[str] = orm.mapped_column(
        sa.String(255), nullable=False, index=True)
    size_mb: orm.Mapped[int] = orm.mapped_column(sa.Integer, nullable=False)
    remote_addr: orm.Mapped[int | None] = orm.mapped_column(
        sa.BigInteger, nullable=True)
    replica_host: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(255), nullable=True)
    # The donor's data-path endpoint (tcp://host:port) and the slab's key
    # there (an RDMA rkey; the TCP transport checks the grant's secret).
    endpoint: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(255), nullable=True)
    rkey: orm.Mapped[int | None] = orm.mapped_column(
        sa.BigInteger, nullable=True)
    # pending (reserved on the donor, being set up), active, reclaiming
    # (a reclaim took it; the consumer and donor are being told), releasing
    # (the donor has not confirmed it freed it), released, reclaimed or
    # failed. Pending, active, reclaiming and releasing slabs hold donor
    # memory.
    status: orm.Mapped[str] = orm.mapped_column(
        sa.String(16), nullable=False, default='active')
    grant: orm.Mapped[Grant] = orm.relationship(back_populates='slabs')


class Audit(Base):
    """A consolidation round and the action plan it produced."""

    __tablename__ = 'audits'

    id: orm.Mapped[int] = orm.mapped_column(sa.Integer, primary_key=True)
    uuid: orm.Mapped[str] = orm.mapped_column(
        sa.String(36), nullable=False, unique=True)
    state: orm.Mapped[str] = orm.mapped_column(
        sa.String(16), nullable=False, default='pending')
    memory_basis: orm.Mapped[str] = orm.mapped_column(
        sa.String(16), nullable=False, default='wss')
    parameters: orm.Mapped[dict | None] = orm.mapped_column(
        sa.JSON, nullable=True)
    reason: orm.Mapped[str | None] = orm.mapped_column(
        sa.Text, nullable=True)
    finished_at: orm.Mapped[datetime.datetime | None] = orm.mapped_column(
        sa.DateTime, nullable=True)
    # Whether the scheduler runs the plan as soon as it is made.
    auto_execute: orm.Mapped[bool] = orm.mapped_column(
        sa.Boolean, nullable=False, default=False, server_default='0')
    # What a partial plan left out and why: {"instances": {uuid: reason},
    # "hosts": {host: reason}}.
    unplaced: orm.Mapped[dict | None] = orm.mapped_column(
        sa.JSON, nullable=True)
    actions: orm.Mapped[list['AuditAction']] = orm.relationship(
        back_populates='audit', order_by='AuditAction.sequence',
        cascade='all, delete-orphan', lazy='selectin')


class AuditAction(Base):
    """One ordered step of an audit's plan: migrate a VM, power a host."""

    __tablename__ = 'audit_actions'
    __table_args__ = (sa.UniqueConstraint(
        'audit_id', 'sequence', name='uniq_audit_actions0audit_id0sequence'),)

    id: orm.Mapped[int] = orm.mapped_column(sa.Integer, primary_key=True)
    audit_id: orm.Mapped[int] = orm.mapped_column(
        sa.ForeignKey('audits.id', ondelete='CASCADE'), nullable=False)
    sequence: orm.Mapped[int] = orm.mapped_column(sa.Integer, nullable=False)
    action_type: orm.Mapped[str] = orm.mapped_column(
        sa.String(32), nullable=False)
    instance_uuid: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(36), nullable=True)
    source_host: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(255), nullable=True)
    dest_host: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(255), nullable=True)
    reason: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(255), nullable=True)
    state: orm.Mapped[str] = orm.mapped_column(
        sa.String(16), nullable=False, default='pending')
    audit: orm.Mapped[Audit] = orm.relationship(back_populates='actions')


class Migration(Base):
    """A live migration memagg asked Nova for, and what it cost."""

    __tablename__ = 'migrations'

    id: orm.Mapped[int] = orm.mapped_column(sa.Integer, primary_key=True)
    uuid: orm.Mapped[str] = orm.mapped_column(
        sa.String(36), nullable=False, unique=True)
    instance_uuid: orm.Mapped[str] = orm.mapped_column(
        sa.String(36), nullable=False, index=True)
    source_host: orm.Mapped[str] = orm.mapped_column(
        sa.String(255), nullable=False)
    dest_host: orm.Mapped[str] = orm.mapped_column(
        sa.String(255), nullable=False)
    status: orm.Mapped[str] = orm.mapped_column(
        sa.String(16), nullable=False, default='queued')
    audit_action_id: orm.Mapped[int | None] = orm.mapped_column(
        sa.ForeignKey('audit_actions.id', ondelete='SET NULL'), nullable=True)
    attempts: orm.Mapped[int] = orm.mapped_column(
        sa.Integer, nullable=False, default=0)
    bytes_transferred: orm.Mapped[int | None] = orm.mapped_column(
        sa.BigInteger, nullable=True)
    duration_s: orm.Mapped[float | None] = orm.mapped_column(
        sa.Float, nullable=True)
    downtime_ms: orm.Mapped[float | None] = orm.mapped_column(
        sa.Float, nullable=True)
    remote_share: orm.Mapped[float | None] = orm.mapped_column(
        sa.Float, nullable=True)
    # The VM's memory that stayed on donors (its grants' pages), MiB.
    remote_mb: orm.Mapped[int | None] = orm.mapped_column(
        sa.Integer, nullable=True)
    # The destination's durability copy still to rebuild from the donors,
    # MiB; 0 once done, None without grants.
    local_copy_left_mb: orm.Mapped[int | None] = orm.mapped_column(
        sa.Integer, nullable=True)
    error: orm.Mapped[str | None] = orm.mapped_column(sa.Text, nullable=True)


class PlacementInventory(Base):
    """A compute node whose MEMORY_MB allocation_ratio in Placement memagg
    sets (memagg.scheduler.placement): the operator's ratio it found there
    first, written back when memagg lets go of the host."""

    __tablename__ = 'placement_inventories'

    id: orm.Mapped[int] = orm.mapped_column(sa.Integer, primary_key=True)
    host: orm.Mapped[str] = orm.mapped_column(
        sa.String(255), nullable=False, unique=True)
    original_allocation_ratio: orm.Mapped[float] = orm.mapped_column(
        sa.Float, nullable=False)
    # What memagg last wrote; NULL until its first write succeeded.
    applied_allocation_ratio: orm.Mapped[float | None] = orm.mapped_column(
        sa.Float, nullable=True)
