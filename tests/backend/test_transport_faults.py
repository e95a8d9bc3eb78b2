"""Transport faults the mock cannot produce, over real loopback sockets: each is a Failure value."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import SecretStr
from returns.result import Failure, Result, Success

from assay.backend import BackendSettings, Timeouts, open_backend, wire_request_id
from assay.core import DiagnosticCode, GenerationResponse, MonotonicClock, UnusableResponse, outcome
from tests.backend.backend_loopback import (
    API_KEY,
    chat_chunk,
    chat_request,
    full_backlog_url,
    http_chunk,
    response_head,
    serve_raw,
    unused_port_url,
)

SHORT = Timeouts(connect_s=2.0, first_token_s=5.0, idle_s=5.0, total_s=5.0)


def settings_for(url: str, timeouts: Timeouts = SHORT) -> BackendSettings:
    return BackendSettings(base_url=url, api_key=SecretStr(API_KEY), timeouts=timeouts)


async def resolve_once(
    settings: BackendSettings, stream: bool = True
) -> Result[GenerationResponse, UnusableResponse]:
    async with open_backend(settings, MonotonicClock()) as backend:
        return await backend.resolve(chat_request(stream=stream))


def failure_of(result: Result[GenerationResponse, UnusableResponse]) -> UnusableResponse:
    match outcome(result):
        case Failure(unusable):
            return unusable
        case Success(response):
            raise AssertionError(f"expected a failure, got {response!r}")


async def test_port_with_nothing_listening_is_connect_error() -> None:
    unusable = failure_of(await resolve_once(settings_for(unused_port_url())))
    assert unusable.code is DiagnosticCode.connect_error
    assert "refused" in unusable.message.lower()


async def never_answer(writer: asyncio.StreamWriter, release: asyncio.Event) -> None:
    await release.wait()


async def test_server_that_never_answers_is_timeout_first_token() -> None:
    async with serve_raw(never_answer) as server:
        timeouts = Timeouts(first_token_s=0.2, idle_s=5.0, total_s=5.0)
        unusable = failure_of(await resolve_once(settings_for(server.url, timeouts)))
        assert unusable.code is DiagnosticCode.timeout_first_token
        assert "before any response" in unusable.message


async def test_total_deadline_shorter_than_first_token_is_timeout_total() -> None:
    async with serve_raw(never_answer) as server:
        timeouts = Timeouts(first_token_s=5.0, idle_s=5.0, total_s=0.2)
        unusable = failure_of(await resolve_once(settings_for(server.url, timeouts)))
        assert unusable.code is DiagnosticCode.timeout_total


async def stall_after_two_tokens(writer: asyncio.StreamWriter, release: asyncio.Event) -> None:
    writer.write(response_head())
    writer.write(http_chunk(chat_chunk("Rivers")))
    writer.write(http_chunk(chat_chunk(" run")))
    await writer.drain()
    await release.wait()


async def test_stream_that_goes_silent_is_timeout_idle_with_partial() -> None:
    async with serve_raw(stall_after_two_tokens) as server:
        timeouts = Timeouts(first_token_s=5.0, idle_s=0.2, total_s=5.0)
        unusable = failure_of(await resolve_once(settings_for(server.url, timeouts)))
        assert unusable.code is DiagnosticCode.timeout_idle
        partial = unusable.evidence.partial
        assert partial is not None
        assert partial.text == "Rivers run"
        assert unusable.evidence.http_status == 200


async def test_stream_past_first_token_hits_total_not_first_token() -> None:
    async with serve_raw(stall_after_two_tokens) as server:
        timeouts = Timeouts(first_token_s=0.3, idle_s=5.0, total_s=0.5)
        unusable = failure_of(await resolve_once(settings_for(server.url, timeouts)))
        assert unusable.code is DiagnosticCode.timeout_total


async def drop_mid_stream(writer: asyncio.StreamWriter, release: asyncio.Event) -> None:
    writer.write(response_head())
    writer.write(http_chunk(chat_chunk("Rivers")))
    writer.write(http_chunk(chat_chunk(" run")))
    await writer.drain()
    writer.transport.abort()


async def test_connection_dropped_mid_stream_is_stream_interrupted() -> None:
    async with serve_raw(drop_mid_stream) as server:
        unusable = failure_of(await resolve_once(settings_for(server.url)))
        assert unusable.code is DiagnosticCode.stream_interrupted
        partial = unusable.evidence.partial
        assert partial is not None
        assert partial.text == "Rivers run"


async def close_without_answer(writer: asyncio.StreamWriter, release: asyncio.Event) -> None:
    writer.transport.abort()


async def test_connection_closed_before_a_response_is_connect_error() -> None:
    async with serve_raw(close_without_answer) as server:
        unusable = failure_of(await resolve_once(settings_for(server.url)))
        assert unusable.code is DiagnosticCode.connect_error
        assert "before a response" in unusable.message


async def test_json_error_status_carries_the_server_message() -> None:
    body = (
        b'{"error":{"message":"The model `nope` does not exist.","type":"NotFoundError",'
        b'"param":"model","code":404}}'
    )

    async def not_found(writer: asyncio.StreamWriter, release: asyncio.Event) -> None:
        writer.write(response_head(404, "application/json", len(body)) + body)
        await writer.drain()

    async with serve_raw(not_found) as server:
        unusable = failure_of(await resolve_once(settings_for(server.url)))
        assert unusable.code is DiagnosticCode.http_status
        assert unusable.evidence.http_status == 404
        assert "The model `nope` does not exist." in unusable.message
        assert unusable.evidence.excerpt == body.decode()


async def test_html_page_on_200_is_bad_content_type() -> None:
    body = b"<html><body><h1>Gateway is warming up</h1></body></html>"

    async def html(writer: asyncio.StreamWriter, release: asyncio.Event) -> None:
        writer.write(response_head(200, "text/html; charset=utf-8", len(body)) + body)
        await writer.drain()

    async with serve_raw(html) as server:
        unusable = failure_of(await resolve_once(settings_for(server.url)))
        assert unusable.code is DiagnosticCode.bad_content_type
        assert unusable.evidence.excerpt is not None
        assert "warming up" in unusable.evidence.excerpt


async def test_json_body_under_a_generic_content_type_is_compiled() -> None:
    body = (
        b'{"id":"chatcmpl-1","object":"chat.completion","model":"tiny-llama","choices":[{"index":0,'
        b'"message":{"role":"assistant","content":"Rivers run."},"finish_reason":"stop"}],'
        b'"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12}}'
    )

    async def plain(writer: asyncio.StreamWriter, release: asyncio.Event) -> None:
        writer.write(response_head(200, "text/plain", len(body)) + body)
        await writer.drain()

    async with serve_raw(plain) as server:
        result = await resolve_once(settings_for(server.url), stream=False)
        match outcome(result):
            case Success(response):
                assert response.text == "Rivers run."
                assert response.output_tokens == 3
            case Failure(unusable):
                raise AssertionError(unusable.message)


async def test_request_carries_bearer_token_request_id_and_json_body() -> None:
    async def not_found(writer: asyncio.StreamWriter, release: asyncio.Event) -> None:
        writer.write(response_head(404, "application/json", 2) + b"{}")
        await writer.drain()

    async with serve_raw(not_found) as server:
        await resolve_once(settings_for(server.url))
        head = server.heads[0].lower()
        assert head.startswith("post /v1/chat/completions ")
        assert f"authorization: bearer {API_KEY}".lower() in head
        assert f"x-request-id: {wire_request_id('r1')}" in head
        assert "content-type: application/json" in head


async def test_api_key_echoed_by_the_server_never_reaches_evidence() -> None:
    body = f'{{"error":{{"message":"bad token Bearer {API_KEY}","type":"auth"}}}}'.encode()

    async def unauthorized(writer: asyncio.StreamWriter, release: asyncio.Event) -> None:
        writer.write(response_head(401, "application/json", len(body)) + body)
        await writer.drain()

    async with serve_raw(unauthorized) as server:
        unusable = failure_of(await resolve_once(settings_for(server.url)))
        assert unusable.code is DiagnosticCode.http_status
        assert API_KEY not in unusable.model_dump_json()
        assert "bad token" in unusable.message


async def test_connect_that_hangs_is_timeout_connect() -> None:
    with full_backlog_url() as url:
        timeouts = Timeouts(connect_s=0.2, first_token_s=5.0, idle_s=5.0, total_s=5.0)
        unusable = failure_of(await resolve_once(settings_for(url, timeouts)))
    assert unusable.code is DiagnosticCode.timeout_connect
    assert "connect deadline of 0.2 s" in unusable.message


async def test_cancellation_propagates_instead_of_becoming_a_failure() -> None:
    async with serve_raw(stall_after_two_tokens) as server:
        settings = settings_for(server.url, Timeouts(first_token_s=30, idle_s=30, total_s=30))
        async with open_backend(settings, MonotonicClock()) as backend:
            task = asyncio.ensure_future(backend.resolve(chat_request()))
            for _ in range(500):  # until the request is in flight, at most ~5 s
                if server.heads:
                    break
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.05)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task


async def error_then_silence(writer: asyncio.StreamWriter, release: asyncio.Event) -> None:
    writer.write(response_head())
    writer.write(http_chunk(chat_chunk("Rivers")))
    error = b'data: {"error":{"message":"engine died","type":"InternalServerError","code":500}}\n\n'
    writer.write(http_chunk(error))
    await writer.drain()
    await release.wait()


async def test_stream_stops_at_a_fatal_event_instead_of_waiting_for_the_end() -> None:
    async with serve_raw(error_then_silence) as server:
        timeouts = Timeouts(first_token_s=30.0, idle_s=30.0, total_s=30.0)
        unusable = failure_of(await resolve_once(settings_for(server.url, timeouts)))
    assert unusable.code is DiagnosticCode.inband_error
    assert "engine died" in unusable.message


async def error_status_with_a_stalled_body(
    writer: asyncio.StreamWriter, release: asyncio.Event
) -> None:
    writer.write(response_head(500, "application/json", 200) + b'{"error":{"message":"ove')
    await writer.drain()
    await release.wait()


async def test_error_status_whose_body_stalls_is_still_http_status() -> None:
    async with serve_raw(error_status_with_a_stalled_body) as server:
        timeouts = Timeouts(first_token_s=5.0, idle_s=0.2, total_s=5.0)
        unusable = failure_of(await resolve_once(settings_for(server.url, timeouts)))
    assert unusable.code is DiagnosticCode.http_status
    assert unusable.evidence.http_status == 500
    assert unusable.evidence.excerpt == '{"error":{"message":"ove'
