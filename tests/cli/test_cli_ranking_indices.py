"""A rerank or score server that names documents by fractional indices (issue 37, item 10):
0.5, 1.5, ... name no document, so every such answer is `unexpected_shape` on both endpoints
and the run is never VALID. Served on loopback by a small aiohttp server of the test's own (the
mock answers only well-formed indices, or one out of range)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from aiohttp import web
from tests.cli.cli_harness import assay_env, assert_every_request_accounted
from tests.cli.test_cli_secrets import run_assay_async

DOCUMENTS = 3


@asynccontextmanager
async def serve_fractional_indices(index_of: str) -> AsyncIterator[str]:
    """A server whose rerank and score answers name document `i` as `i + 0.5` (or as the
    literal `index_of` with `{i}` in it)."""

    def results(score_key: str) -> str:
        items = [
            f'{{"index": {index_of.format(i=i)}, "{score_key}": {0.9 - i / 10}}}'
            for i in range(DOCUMENTS)
        ]
        return ", ".join(items)

    async def models(request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "ranker"}]})

    async def rerank(request: web.Request) -> web.Response:
        await request.read()
        listed = results("relevance_score")
        body = f'{{"id": "r", "usage": {{"prompt_tokens": 9}}, "results": [{listed}]}}'
        return web.Response(body=body.encode(), content_type="application/json")

    async def score(request: web.Request) -> web.Response:
        await request.read()
        listed = results("score")
        body = f'{{"object": "list", "data": [{listed}], "usage": {{"prompt_tokens": 9}}}}'
        return web.Response(body=body.encode(), content_type="application/json")

    app = web.Application()
    app.router.add_get("/v1/models", models)
    app.router.add_post("/v1/rerank", rerank)
    app.router.add_post("/v1/score", score)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]  # started above
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


@pytest.mark.parametrize("endpoint", ["rerank", "score"])
@pytest.mark.parametrize("index_of", ["{i}.5", "{i}.0", "{i}e0", '"{i}"'])
async def test_fractional_or_non_integer_indices_are_unexpected_shape(
    tmp_path: Path, endpoint: str, index_of: str
) -> None:
    run_dir = tmp_path / "run"
    async with serve_fractional_indices(index_of) as url:
        result = await run_assay_async(
            "run", "--target", url, "--endpoint", endpoint, "--documents", str(DOCUMENTS),
            "--document-tokens", "4", "--prompt-tokens", "4", "--profile", "concurrent",
            "--concurrency", "2", "--max-requests", "6", "--processes", "1",
            "--output-dir", run_dir,
            env=assay_env(),
        )  # fmt: skip
    assert result.exit_code == 1, result.stdout + result.stderr
    assert "VALID RUN" not in result.stdout.replace("INVALID RUN", "")
    report = assert_every_request_accounted(run_dir)
    outcomes = report.totals.outcomes
    assert (outcomes.completed, outcomes.errored) == (0, 6)
    assert {code.value for code in report.totals.errors_by_code} == {"unexpected_shape"}
