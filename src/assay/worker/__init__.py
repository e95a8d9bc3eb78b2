"""assay.worker."""
