"""memagg's tempest plug-in: API tests run against a deployed memagg.

Installed with memagg (entry point ``tempest.test_plugins``); tempest finds
it by itself. Tests run with ``tempest run --regex tempest_plugin``.
"""
