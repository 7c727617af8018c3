"""pytest fixture for in-process RPC over oslo.messaging's fake driver."""
import pytest

from memagg.common import rpc


@pytest.fixture
def fake_rpc(conf):
    """Point memagg.common.rpc at a fresh ``fake://`` transport."""
    rpc.cleanup()
    transport = rpc.init(url='fake://')
    yield transport
    rpc.cleanup()
