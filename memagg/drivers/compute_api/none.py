"""The ``none`` compute API driver: no Nova, so no VM names a weight and
no plan can be executed.

The default: memagg-aio and nodes outside an OpenStack cloud run without a
compute service, and every VM gets [local_policy] default_weight. Every
call that would act on the cloud (live migration, enabling a host) raises
ComputeApiUnavailable saying to set [compute] compute_api_driver = nova.
"""
from memagg.drivers.compute_api import base


class NoComputeApi(base.ComputeApi):
    """Knows no VM's weight and reaches no compute service."""

    name = 'none'

    def get_qos_weight(self, instance_uuid):
        return base.NO_WEIGHT
