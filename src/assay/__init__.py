"""assay: benchmark OpenAI-compatible LLM servers and count only what was really served."""

__version__ = "0.1.0"

__all__ = ["__version__"]
