"""assay.scheduler."""
