"""Fixtures of these tests."""
from memagg.tests.rpc_fixtures import fake_rpc  # noqa: F401
