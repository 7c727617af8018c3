"""Fixtures of these tests."""
import pytest

from memagg.tests.rpc_fixtures import fake_rpc  # noqa: F401
from memagg.tests import swapd_fixtures


@pytest.fixture(autouse=True)
def remote_memory_opts(conf):
    """[swapd] and [reservoir] registered (see swapd_fixtures)."""
    swapd_fixtures.register_opts(conf.conf)
    return conf
