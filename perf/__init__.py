"""Benchmarks of assay itself (not part of the installed package)."""
