"""Versioned objects memagg passes over RPC."""


def register_all():
    """Import every object module so its classes are in the registry."""
    __import__('memagg.objects.report')
