"""A loopback server whose every text is an attack on the terminal that shows it (issue 21.5).

Its in-band errors carry OSC 52 (a clipboard write), OSC 0 (a window title), CSI 2J (clear the
screen) and a green "VALID RUN" painted with SGR; its `/metrics` body is binary (NUL, 0xFF)
around the same sequences (after a first sound scrape, unless told otherwise).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Final

from aiohttp import web

PAYLOAD: Final = (
    "\x1b]52;c;ZXZpbCBjbGlwYm9hcmQ=\x07"  # OSC 52: write the clipboard
    "\x1b]0;owned title\x07"  # OSC 0: set the window title
    "\x1b[2J\x1b[H"  # CSI 2J: clear the screen, cursor home
    "\x1b[1;32mVALID RUN\x1b[0m"  # a verdict that is not assay's
    "\x9b31m\u202eevil"  # a C1 CSI and a right-to-left override
)
METRICS_BODY: Final = b"\x00\xff\xfe" + PAYLOAD.encode() + b" 1\n\x00garbage{\n"
CONTROLS: Final = ("\x1b", "\x07", "\x00", "\x9b", "\u202e")
"""Characters that must never reach a terminal."""


@asynccontextmanager
async def serve_hostile_text(*, sound_first_scrape: bool = True) -> AsyncIterator[str]:
    """The server's base URL; every chat answer is an in-band error carrying `PAYLOAD`."""

    async def models(request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "text-model"}]})

    async def chat(request: web.Request) -> web.Response:
        await request.read()
        return web.json_response({"error": {"message": PAYLOAD, "type": PAYLOAD}})

    scrapes = 0

    async def metrics(request: web.Request) -> web.Response:
        # The first scrape is sound (so the run starts), every later one binary and hostile.
        nonlocal scrapes
        scrapes += 1
        sound = sound_first_scrape and scrapes == 1
        body = b"requests_total 0\n" if sound else METRICS_BODY
        return web.Response(body=body, content_type="text/plain")

    app = web.Application()
    app.router.add_get("/v1/models", models)
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_get("/metrics", metrics)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]  # started above
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()
