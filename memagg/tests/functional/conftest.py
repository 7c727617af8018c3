"""Fixtures every functional test module shares, defined once here so the
session starts one of each: a RabbitMQ virtual host, a real Keystone and a
running memagg behind it (``deployment``)."""
from memagg.tests.functional.deployment import deployment  # noqa: F401
from memagg.tests.functional.keystone import keystone  # noqa: F401
from memagg.tests.functional.service_procs import rabbit_url_fixture  # noqa: F401,E501
