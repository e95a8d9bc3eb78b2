"""assay.mock."""
