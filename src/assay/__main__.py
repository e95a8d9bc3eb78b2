"""`python -m assay ...` runs the command line, as the `assay` script does."""

from __future__ import annotations

from assay.cli.app import main

if __name__ == "__main__":
    main()
