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

"""What memagg-compute reports to memagg-scheduler every collection period.

The fields mirror the columns of hosts, instances, wss_samples and
host_samples in memagg/db/sqlalchemy/models.py.
"""
from oslo_utils import versionutils
from oslo_versionedobjects import fields

from memagg.objects import base


def _sampler_fields():
    """The native sampler behind an estimate (memagg.compute.sampling):
    the kernel interface it reads (None without a sampler), the half-width
    of the sampled estimate's confidence interval in MiB and the pages it
    drew (None without a sampled window); ``warming`` when the estimate was
    kept out of the WSS max-average (a first window, a moved allocation,
    or the balloon statistics standing in for a lost window)."""
    return {
        'sampler_backend': fields.StringField(nullable=True, default=None),
        'sampler_error_mb': fields.FloatField(nullable=True, default=None),
        'sampler_pages': fields.IntegerField(nullable=True, default=None),
        'warming': fields.BooleanField(default=False),
    }


def _pop_sampler_fields(primitive):
    for name in _sampler_fields():
        primitive.pop(name, None)


def _reclaim_fields(history=False):
    """Host-side reclaim of the VM (memagg.compute.reclaim): MiB of its
    guest RAM paged out by host reclaim and not yet faulted back and its
    promotion rate (pages faulted back per minute); for an instance also
    that rate as a percentage of its WSS max-average per minute, the
    promotion SLO (pages per minute) and the mechanism ('madvise',
    'memcg' or 'none', followed by ': <reason>' when it reclaims
    nothing). None: not known (no period yet, or a sender from before)."""
    fields_ = {
        'reclaimed_mb': fields.IntegerField(nullable=True, default=None),
        'promotion_rate': fields.FloatField(nullable=True, default=None),
    }
    if not history:
        fields_.update({
            'promotion_rate_pct': fields.FloatField(nullable=True,
                                                    default=None),
            'promotion_slo': fields.FloatField(nullable=True, default=None),
            'reclaim_mechanism': fields.StringField(nullable=True,
                                                    default=None),
        })
    return fields_


def _pop_reclaim_fields(primitive):
    for name in _reclaim_fields():
        primitive.pop(name, None)


@base.MemaggObjectRegistry.register
class InstanceReport(base.MemaggObject):
    """One VM on the reporting host, with its memory sizes in MiB."""

    # Version 1.0: Initial version
    # Version 1.1: vcpus
    # Version 1.2: local_policy
    # Version 1.3: sampler_backend, sampler_error_mb, sampler_pages, warming
    # Version 1.4: reclaimed_mb, promotion_rate, promotion_rate_pct,
    #              promotion_slo, reclaim_mechanism
    # Version 1.5: l1_share_mb
    VERSION = '1.5'

    fields = {
        'uuid': fields.UUIDField(),
        'name': fields.StringField(),
        'project_id': fields.StringField(nullable=True),
        'booked_mb': fields.IntegerField(),
        'current_mb': fields.IntegerField(),
        'target_mb': fields.IntegerField(nullable=True),
        'wss_mb': fields.IntegerField(nullable=True),
        'wss_maxavg_mb': fields.IntegerField(nullable=True),
        'estimator': fields.StringField(nullable=True),
        'cpu_util': fields.FloatField(),
        'vcpus': fields.IntegerField(default=0),
        'local_policy': fields.StringField(nullable=True, default=None),
        # Its L1 allocation by the tier policy's last plan, MiB (None:
        # none planned yet).
        'l1_share_mb': fields.IntegerField(nullable=True, default=None),
        **_sampler_fields(),
        **_reclaim_fields(),
    }

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        target = versionutils.convert_version_to_tuple(target_version)
        if target < (1, 5):
            primitive.pop('l1_share_mb', None)
        if target < (1, 4):
            _pop_reclaim_fields(primitive)
        if target < (1, 3):
            _pop_sampler_fields(primitive)
        if target < (1, 2):
            primitive.pop('local_policy', None)
        if target < (1, 1):
            primitive.pop('vcpus', None)


@base.MemaggObjectRegistry.register
class WssSample(base.MemaggObject):
    """One period's working-set estimate of one VM, and its CPU use in
    cores (the VM's utilisation times its vCPUs)."""

    # Version 1.0: Initial version
    # Version 1.1: cpu_util
    # Version 1.2: sampler_backend, sampler_error_mb, sampler_pages, warming
    # Version 1.3: reclaimed_mb, promotion_rate
    VERSION = '1.3'

    fields = {
        'instance_uuid': fields.UUIDField(),
        'sampled_at': fields.DateTimeField(tzinfo_aware=False),
        'wss_mb': fields.IntegerField(),
        'wss_maxavg_mb': fields.IntegerField(nullable=True),
        'current_mb': fields.IntegerField(),
        'target_mb': fields.IntegerField(nullable=True),
        'estimator': fields.StringField(),
        'cpu_util': fields.FloatField(nullable=True, default=None),
        **_sampler_fields(),
        **_reclaim_fields(history=True),
    }

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        target = versionutils.convert_version_to_tuple(target_version)
        if target < (1, 3):
            _pop_reclaim_fields(primitive)
        if target < (1, 2):
            _pop_sampler_fields(primitive)
        if target < (1, 1):
            primitive.pop('cpu_util', None)


#: A grant's ledger's counts, per tier (l1 then l2).
LEDGER_COUNTS = tuple('%s_%s' % (tier, count) for tier in ('l1', 'l2')
                      for count in ('puts', 'gets', 'flushes', 'moved_in',
                                    'moved_out', 'evicts', 'used'))


@base.MemaggObjectRegistry.register
class GrantLedger(base.MemaggObject):
    """The ledger of a grant this host's memagg-swapd serves, per tier
    (l1_*: slabs on donors, l2_*: in the local copy only), in 4 KiB pages
    (memagg.compute.swapd.SwapdClient.export_stats)."""

    # Version 1.0: Initial version
    VERSION = '1.0'

    fields = {
        'grant_uuid': fields.UUIDField(),
        **{name: fields.IntegerField() for name in LEDGER_COUNTS},
    }


@base.MemaggObjectRegistry.register
class ComputeReport(base.MemaggObject):
    """A compute node's state, its VMs and their new WSS samples.

    ``cpu_util`` is the fraction (0..1) of the host's CPUs in use over the
    period and ``mem_used_mb`` the sum of its VMs' WSS max-average (what a
    VM without one has in RAM otherwise): together a host sample.
    ``free_reservoir_mb`` counts what host reclaim holds paged out as
    freed, as it counts what the balloons hold.
    """

    # Version 1.0: Initial version
    # Version 1.1: mem_used_mb; InstanceReport 1.1, WssSample 1.1
    # Version 1.2: InstanceReport 1.2
    # Version 1.3: InstanceReport 1.3, WssSample 1.2
    # Version 1.4: InstanceReport 1.4, WssSample 1.3
    # Version 1.5: ledgers; InstanceReport 1.5
    # Version 1.6: local_room_mb
    VERSION = '1.6'

    fields = {
        'host': fields.StringField(),
        'reported_at': fields.DateTimeField(tzinfo_aware=False),
        'memory_mb': fields.IntegerField(),
        'reserved_mb': fields.IntegerField(),
        'vcpus': fields.IntegerField(),
        'cpu_util': fields.FloatField(),
        'free_reservoir_mb': fields.IntegerField(),
        'lendable_mb': fields.IntegerField(),
        'instances': fields.ListOfObjectsField('InstanceReport', default=[]),
        'samples': fields.ListOfObjectsField('WssSample', default=[]),
        'mem_used_mb': fields.IntegerField(nullable=True, default=None),
        'ledgers': fields.ListOfObjectsField('GrantLedger', default=[]),
        # MiB its local copies' filesystem can take for new grants (None:
        # not known).
        'local_room_mb': fields.IntegerField(nullable=True, default=None),
    }

    obj_relationships = {
        'instances': [('1.0', '1.0'), ('1.1', '1.1'), ('1.2', '1.2'),
                      ('1.3', '1.3'), ('1.4', '1.4'), ('1.5', '1.5'),
                      ('1.6', '1.5')],
        'samples': [('1.0', '1.0'), ('1.1', '1.1'), ('1.2', '1.1'),
                    ('1.3', '1.2'), ('1.4', '1.3')],
        'ledgers': [('1.5', '1.0')],
    }

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        target = versionutils.convert_version_to_tuple(target_version)
        if target < (1, 6):
            primitive.pop('local_room_mb', None)
        if target < (1, 5):
            primitive.pop('ledgers', None)
        if target < (1, 1):
            primitive.pop('mem_used_mb', None)

    _HOST_COLUMNS = ('memory_mb', 'reserved_mb', 'vcpus', 'cpu_util',
                     'free_reservoir_mb', 'lendable_mb', 'local_room_mb')

    def to_db_values(self):
        """Return (host, instances, samples) as memagg.db.reports.report_ingest
        takes them: dicts of column values.
        """
        host = {'name': self.host}
        # A sender from before 1.6 says nothing of its local room: NULL.
        host.update({key: getattr(self, key) if self.obj_attr_is_set(key)
                     else None for key in self._HOST_COLUMNS})
        instances = [i.as_dict() for i in self.instances]
        samples = [s.as_dict() for s in self.samples]
        return host, instances, samples

    def host_sample(self):
        """The host_samples row of this report (``host_sample`` of
        memagg.db.reports.report_ingest). A report from a 1.0 sender, which has
        no ``mem_used_mb``, sums what its instances report instead."""
        used = self.mem_used_mb if self.obj_attr_is_set(
            'mem_used_mb') else None
        if used is None:
            used = sum(resident_mb(i) for i in self.instances)
        return {'cpu_util': self.cpu_util, 'mem_used_mb': used}


def resident_mb(instance):
    """What ``instance`` (an InstanceReport) keeps in RAM, in MiB: its WSS
    max-average, else its latest WSS, else its current size less what host
    reclaim holds paged out (as the balloon lowers the current size)."""
    for name in ('wss_maxavg_mb', 'wss_mb'):
        if instance.obj_attr_is_set(name) and getattr(instance,
                                                      name) is not None:
            return getattr(instance, name)
    if not instance.obj_attr_is_set('current_mb'):
        return 0
    reclaimed = (instance.reclaimed_mb
                 if instance.obj_attr_is_set('reclaimed_mb') else None)
    return in_use_mb(instance.current_mb, reclaimed)


def in_use_mb(current_mb, reclaimed_mb):
    """A VM's memory in use on its host, MiB: its current size (what the
    balloon left it) less what host reclaim holds paged out."""
    return max(0, current_mb - (reclaimed_mb or 0))
