"""Base class of memagg's API tests: credentials, client, microversions."""
from tempest.lib.common import api_version_utils
from tempest import config
from tempest import test

CONF = config.CONF


class BaseMemaggTest(api_version_utils.BaseMicroversionTest,
                     test.BaseTestCase):
    """memagg's policies default to admin: tests run as the admin."""

    credentials = ['admin']
    min_microversion = None
    max_microversion = 'latest'

    @classmethod
    def skip_checks(cls):
        super().skip_checks()
        if not CONF.service_available.memagg:
            raise cls.skipException('memagg is not deployed '
                                    '([service_available] memagg = False)')
        api_version_utils.check_skip_with_microversion(
            cls.min_microversion, cls.max_microversion,
            CONF.memagg.min_microversion, CONF.memagg.max_microversion)

    @classmethod
    def setup_clients(cls):
        super().setup_clients()
        cls.client = cls.os_admin.memagg.MemaggClient()

    @classmethod
    def resource_setup(cls):
        super().resource_setup()
        cls.request_microversion = (
            api_version_utils.select_request_microversion(
                cls.min_microversion, CONF.memagg.min_microversion))
        cls.client.api_microversion = cls.request_microversion
