"""A loopback server that serves only `/v1/chat/completions` (as llmock does) and counts every
request by path, for the probe and target-URL tests."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from aiohttp import web

ANSWER = {
    "object": "chat.completion",
    "model": "chat-only",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "Hi."}, "finish_reason": "stop"}
    ],
    "usage": {"prompt_tokens": 4, "completion_tokens": 2, "total_tokens": 6},
}


@dataclass
class ChatOnly:
    url: str
    hits: Counter[str] = field(default_factory=Counter)


@asynccontextmanager
async def serve_chat_only(models: bool = True, chat_status: int = 200) -> AsyncIterator[ChatOnly]:
    """The server; `models=False` drops `/v1/models`, `chat_status` makes chat answer an error."""
    served = ChatOnly(url="")

    @web.middleware
    async def count(
        request: web.Request,
        handler: Callable[[web.Request], Awaitable[web.StreamResponse]],
    ) -> web.StreamResponse:
        served.hits[request.path] += 1
        return await handler(request)

    async def list_models(request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "chat-only"}]})

    async def chat(request: web.Request) -> web.Response:
        await request.read()
        if chat_status != 200:
            return web.json_response({"detail": "bad field 'foo'"}, status=chat_status)
        return web.json_response(ANSWER)

    app = web.Application(middlewares=[count])
    if models:
        app.router.add_get("/v1/models", list_models)
    app.router.add_post("/v1/chat/completions", chat)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]  # started
    served.url = f"http://127.0.0.1:{port}"
    try:
        yield served
    finally:
        await runner.cleanup()
