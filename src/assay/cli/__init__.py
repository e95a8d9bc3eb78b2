"""The `assay` command (`assay.cli.app:main`); the library's names are in `assay` itself."""

__all__: list[str] = []
