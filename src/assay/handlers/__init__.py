"""assay.handlers."""
