"""assay.reports."""
