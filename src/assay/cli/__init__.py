"""assay.cli."""
