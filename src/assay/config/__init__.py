"""assay.config."""
