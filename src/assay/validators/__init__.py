"""assay.validators."""
