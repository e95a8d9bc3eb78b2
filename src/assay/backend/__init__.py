"""assay.backend."""
