"""The ``none`` compute API driver: no Nova, so no VM names a weight.

The default: memagg-aio and nodes outside an OpenStack cloud run without a
compute service, and every VM gets [local_policy] default_weight.
"""
from memagg.drivers.compute_api import base


class NoComputeApi(base.ComputeApi):
    """Knows no VM's weight."""

    name = 'none'

    def get_qos_weight(self, instance_uuid):
        return base.NO_WEIGHT
