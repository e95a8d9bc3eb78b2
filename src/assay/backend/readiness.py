"""Is the target there and serving a model? Checked once before a run, with a clear message."""

from __future__ import annotations

from assay.backend.client import open_backend
from assay.backend.settings import BackendSettings
from assay.core.clock import MonotonicClock
from assay.errors import ServerNotReady


async def check_ready(settings: BackendSettings, model: str | None = None) -> str:
    """The model to benchmark: `model` when given, else the first one the server lists.

    Raises `ServerNotReady` when nothing listens, `/v1/models` fails, or no model is listed.
    A configured model the server does not list is still used: some servers (TGI) accept any
    name, and a server that rejects it shows up as `http_status` errors with its own message.

    >>> import asyncio
    >>> settings = BackendSettings(base_url="http://127.0.0.1:9")
    >>> asyncio.run(check_ready(settings))
    Traceback (most recent call last):
    ...
    assay.errors.ServerNotReady: no server at http://127.0.0.1:9 (connection refused)
    """
    async with open_backend(settings, MonotonicClock()) as backend:
        models = await backend.list_models()
    if not models:
        raise ServerNotReady(f"{settings.base_url} returned no models")
    return model if model is not None else models[0]
