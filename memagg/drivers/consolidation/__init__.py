"""Consolidation: Neat's algorithm families with memory (ALGORITHMS.md §3)."""
