"""memagg: memory aggregation for OpenStack clouds."""
