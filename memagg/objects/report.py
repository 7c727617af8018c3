"""What memagg-compute reports to memagg-scheduler every collection period.

The fields mirror the columns of hosts, instances and wss_samples in
memagg/db/sqlalchemy/models.py.
"""
from oslo_versionedobjects import fields

from memagg.objects import base


@base.MemaggObjectRegistry.register
class InstanceReport(base.MemaggObject):
    """One VM on the reporting host, with its memory sizes in MiB."""

    # Version 1.0: Initial version
    VERSION = '1.0'

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
    }


@base.MemaggObjectRegistry.register
class WssSample(base.MemaggObject):
    """One period's working-set estimate of one VM."""

    # Version 1.0: Initial version
    VERSION = '1.0'

    fields = {
        'instance_uuid': fields.UUIDField(),
        'sampled_at': fields.DateTimeField(tzinfo_aware=False),
        'wss_mb': fields.IntegerField(),
        'wss_maxavg_mb': fields.IntegerField(nullable=True),
        'current_mb': fields.IntegerField(),
        'target_mb': fields.IntegerField(nullable=True),
        'estimator': fields.StringField(),
    }


@base.MemaggObjectRegistry.register
class ComputeReport(base.MemaggObject):
    """A compute node's state, its VMs and their new WSS samples."""

    # Version 1.0: Initial version
    VERSION = '1.0'

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
    }

    _HOST_COLUMNS = ('memory_mb', 'reserved_mb', 'vcpus', 'cpu_util',
                     'free_reservoir_mb', 'lendable_mb')

    def to_db_values(self):
        """Return (host, instances, samples) as memagg.db.api.report_ingest
        takes them: dicts of column values.
        """
        host = {'name': self.host}
        host.update({key: getattr(self, key) for key in self._HOST_COLUMNS})
        instances = [i.as_dict() for i in self.instances]
        samples = [s.as_dict() for s in self.samples]
        return host, instances, samples
