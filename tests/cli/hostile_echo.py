"""A loopback server that echoes every request header back in each way a body can carry text.

It stands for a server (or a proxy) that reflects credentials into error messages: the answers
cycle through an in-band error, an `event: error` frame, an invalid-JSON data line long enough
that a cap would cut a key in half, a stream dropped mid-answer, and an HTTP error body.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import orjson
from aiohttp import web

MODES = ("inband", "event_error", "invalid_json", "dropped", "http_401", "completed")


def _echo(request: web.Request) -> str:
    return "; ".join(f"{name}: {value}" for name, value in request.headers.items())


def _delta(text: str) -> bytes:
    chunk = {
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {"content": text}}],
    }
    return b"data: " + orjson.dumps(chunk) + b"\n\n"


@asynccontextmanager
async def serve_hostile_echo() -> AsyncIterator[str]:
    """The server's base URL; answers cycle through `MODES`, one per request."""
    modes = itertools.cycle(MODES)

    async def models(request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "echo-model"}]})

    async def chat(request: web.Request) -> web.StreamResponse:
        await request.read()
        echo = _echo(request)
        mode = next(modes)
        if mode == "inband":
            return web.json_response({"error": {"message": f"rejected: {echo}"}})
        if mode == "http_401":
            return web.json_response({"error": {"message": f"unauthorized: {echo}"}}, status=401)
        stream = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await stream.prepare(request)
        await stream.write(_delta(f"you sent {echo} "))
        if mode == "event_error":
            await stream.write(b"event: error\ndata: " + orjson.dumps({"error": echo}) + b"\n\n")
        elif mode == "invalid_json":
            # The echo starts near the excerpt cap, so capping before redacting cuts the key.
            await stream.write(b"data: {" + b"x" * 2030 + echo.encode() + b"\n\n")
        elif mode == "dropped":
            assert request.transport is not None
            request.transport.close()
            return stream
        else:
            await stream.write(_delta(echo))
            finish = {
                "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
            }
            await stream.write(b"data: " + orjson.dumps(finish) + b"\n\ndata: [DONE]\n\n")
        await stream.write_eof()
        return stream

    app = web.Application()
    app.router.add_get("/v1/models", models)
    app.router.add_post("/v1/chat/completions", chat)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]  # started above
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()
