"""Fixtures of these tests."""
from memagg.tests.rpc_fixtures import fake_rpc  # noqa: F401
from memagg.tests.unit.reservoir.fixtures import reservoir_opts  # noqa: F401,E501
from memagg.tests.unit.reservoir.fixtures import reservoir_plugins  # noqa: F401,E501
