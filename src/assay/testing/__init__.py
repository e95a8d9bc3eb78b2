"""assay.testing."""
