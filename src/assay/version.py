"""The version of assay: in a module of its own, so any layer (and the build, see pyproject.toml)
reads it without importing the front door, which names every layer."""

__version__ = "0.1.0"
