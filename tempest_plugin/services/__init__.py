"""Service clients of memagg's REST API for tempest."""
from tempest_plugin.services.memagg_client import MemaggClient

__all__ = ['MemaggClient']
