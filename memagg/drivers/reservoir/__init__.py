"""Donor selection plug-ins of the global memory reservoir (ALGORITHMS.md
§4), entry-point namespace ``memagg.reservoir``."""
