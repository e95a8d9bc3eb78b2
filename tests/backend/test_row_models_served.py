"""The models a data file's rows name must be listed by `/v1/models` before the load, as a
traffic mix's are: checked on fake listings, then through `wait_for_model` against loopback
servers (one that lists its model, one without the listing route, one that lists windows)."""

from __future__ import annotations

import asyncio
import tracemalloc
from collections.abc import Iterator
from contextlib import AbstractAsyncContextManager

import pytest

from assay.backend import BackendSettings
from assay.backend.readiness import wait_for_model
from assay.backend.served_models import RowModels, ServedModel, unserved_rows
from assay.errors import ServerNotReady
from tests.backend.backend_loopback import RawServer, response_head, serve_raw
from tests.backend.chat_only import serve_chat_only

URL = "http://127.0.0.1:8000"


def listing(body: bytes) -> AbstractAsyncContextManager[RawServer]:
    """A loopback server answering every request with `body` as its 200 JSON."""

    async def script(writer: asyncio.StreamWriter, release: asyncio.Event) -> None:
        writer.write(response_head(200, "application/json", len(body)) + body)
        await writer.drain()

    return serve_raw(script)


def _rows(*named: tuple[str, int], unit: str = "line") -> RowModels:
    return RowModels("--data rows", unit, named)


def test_rows_naming_only_listed_models_pass() -> None:
    listed = [ServedModel("base"), ServedModel("sql-lora")]
    assert unserved_rows(_rows(("sql-lora", 1), ("base", 2), ("sql-lora", 9)), listed, URL) is None


def test_each_unlisted_name_is_given_with_the_row_that_first_names_it() -> None:
    rows = _rows(("base", 1), ("x", 3), ("y", 5), ("x", 7), ("y", 2))
    assert unserved_rows(rows, [ServedModel("base")], URL) == (
        f"models named by --data rows not served at {URL}: 'x' (first at line 3), "
        "'y' (first at line 5); it serves: 'base'"
    )


def test_a_json_arrays_rows_are_items_and_an_empty_listing_serves_none() -> None:
    rows = RowModels("--trace rows", "item", [("x", 4)])
    assert unserved_rows(rows, [], URL) == (
        f"models named by --trace rows not served at {URL}: 'x' (first at item 4); it serves: none"
    )


def test_past_twenty_unlisted_names_the_rest_are_counted_by_row() -> None:
    rows = _rows(*((f"m{n}", n + 1) for n in range(25)), ("m0", 99), ("m24", 100))
    problem = unserved_rows(rows, [ServedModel("base")], URL)
    assert problem is not None
    assert "'m19' (first at line 20) and more in 6 other lines; it serves: 'base'" in problem
    assert "'m20'" not in problem


def test_a_name_that_cannot_be_printed_is_made_printable() -> None:
    problem = unserved_rows(_rows(("evil\x1b[2J", 1)), [ServedModel("m")], URL)
    assert problem is not None
    assert "\x1b" not in problem


class _ManyNames:
    """A million rows, each naming a model of its own, made as they are read."""

    def __iter__(self) -> Iterator[tuple[str, int]]:
        return ((f"model-{n}", n + 1) for n in range(1_000_000))


def test_a_million_distinct_names_are_checked_in_bounded_memory() -> None:
    rows = RowModels("--data rows", "line", _ManyNames())
    tracemalloc.start()
    try:
        problem = unserved_rows(rows, [ServedModel("m")], URL)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert problem is not None
    assert problem.count("(first at line") == 20
    assert "and more in 999,980 other lines" in problem
    # A set of a million names would take tens of megabytes; the check keeps twenty.
    assert peak < 256 * 1024, peak


async def test_a_server_that_lists_its_model_refuses_rows_naming_another() -> None:
    async with serve_chat_only() as server:
        with pytest.raises(ServerNotReady) as refused:
            await wait_for_model(
                BackendSettings(base_url=server.url),
                "chat-only",
                rows=_rows(("chat-only", 1), ("nope", 3)),
            )
    assert str(refused.value) == (
        f"models named by --data rows not served at {server.url}: 'nope' (first at line 3); "
        "it serves: 'chat-only'"
    )
    # Refused at once, from one listing: nothing else was asked.
    assert server.hits == {"/v1/models": 1}


async def test_rows_naming_listed_models_keep_the_runs_model() -> None:
    async with serve_chat_only() as server:
        ready = await wait_for_model(
            BackendSettings(base_url=server.url), "base", rows=_rows(("chat-only", 1))
        )
    assert ready == ServedModel("base")


async def test_a_server_without_the_listing_route_is_taken_at_its_word() -> None:
    async with serve_chat_only(models=False) as server:
        ready = await wait_for_model(
            BackendSettings(base_url=server.url), "chat-only", rows=_rows(("nope", 1))
        )
    assert ready == ServedModel("chat-only")


async def test_an_unreadable_listing_is_taken_at_its_word() -> None:
    body = b'{"object":"list","data":"not a list"}'

    async with listing(body) as server:
        ready = await wait_for_model(
            BackendSettings(base_url=server.url), "m", rows=_rows(("nope", 1))
        )
    assert ready == ServedModel("m")


async def test_the_runs_window_is_its_own_models_not_the_rows() -> None:
    body = (
        b'{"object":"list","data":[{"id":"big","max_model_len":32768},'
        b'{"id":"small","max_model_len":2048}]}'
    )

    async with listing(body) as server:
        ready = await wait_for_model(
            BackendSettings(base_url=server.url), "big", rows=_rows(("small", 1))
        )
    assert ready == ServedModel("big", 32768)


async def test_a_mix_and_its_rows_are_both_checked() -> None:
    async with serve_chat_only() as server:
        with pytest.raises(ServerNotReady, match=r"^models named by --data rows .*'lora'"):
            await wait_for_model(
                BackendSettings(base_url=server.url),
                "chat-only",
                mix=("chat-only",),
                rows=_rows(("lora", 2)),
            )


async def test_a_row_naming_the_runs_own_unlisted_model_passes_as_that_model_does() -> None:
    # One `--model` given alone is used as given (some servers accept any name): a row naming
    # it is not refused for it; a row naming another unlisted model still is.
    async with serve_chat_only() as server:
        settings = BackendSettings(base_url=server.url)
        ready = await wait_for_model(settings, "tgi-model", rows=_rows(("tgi-model", 1)))
        assert ready == ServedModel("tgi-model")
        with pytest.raises(ServerNotReady, match=r"'other' \(first at line 2\); it serves:"):
            await wait_for_model(settings, "tgi-model", rows=_rows(("tgi-model", 1), ("other", 2)))


async def test_bare_names_are_served_by_their_latest_tag_as_ollama_serves_them() -> None:
    # Ollama lists a model pulled without a tag as `name:latest` and serves it by either name.
    body = (
        b'{"object":"list","data":[{"id":"llama3:latest","max_model_len":8192},'
        b'{"id":"phi3:latest","max_model_len":4096},{"id":"qwen:7b"}]}'
    )

    async with listing(body) as server:
        settings = BackendSettings(base_url=server.url)
        alone = await wait_for_model(settings, "llama3", rows=_rows(("phi3", 1), ("qwen:7b", 2)))
        assert alone == ServedModel("llama3", 8192)  # the name as given, the window as listed
        mixed = await wait_for_model(settings, "llama3", mix=("llama3", "phi3"))
        assert mixed == ServedModel("llama3", 4096)  # the narrowest of the mix
        with pytest.raises(ServerNotReady, match=r"'qwen' \(first at line 1\)"):
            await wait_for_model(settings, "llama3", rows=_rows(("qwen", 1)))  # no `:latest`
