"""The mock's aiohttp application: routes, fault choice, and playing a script with its latency.

Per-request work is kept small (the mock is the target of throughput benchmarks): a zero-latency
answer is one pre-encoded body written at once, with no sleep and no chunked encoding.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from contextlib import nullcontext
from typing import Any, assert_never

import orjson
from aiohttp import web

from assay.data.tokenizer import BuiltinTokenizer
from assay.errors import ConfigError
from assay.mock.answer_plan import LatencySampler, output_pieces, plan_length
from assay.mock.asks import (
    BadRequest,
    EmbeddingAsk,
    GenerationAsk,
    RankingAsk,
    load_body,
    read_embedding,
    read_generation,
    read_ranking,
)
from assay.mock.capacity import ServerLoad, Sleep, wait_for_tokens
from assay.mock.choices import BAD_TOOL_ARGUMENTS, choices_body, choices_stream
from assay.mock.config import MockConfig
from assay.mock.embeddings import embeddings_body
from assay.mock.faults import (
    CUT_FAULTS,
    FAULT_HEADER,
    REQUEST_ID_HEADER,
    TRACEPARENT_HEADER,
    FaultSpec,
    choose_fault,
    parse_fault_header,
)
from assay.mock.metrics import (
    FINISHED_FAULTS,
    Served,
    ServedCounters,
    generated_tokens,
    gpu_lines,
)
from assay.mock.per_endpoint import answer_id, fault_applies
from assay.mock.ranking import ranking_body
from assay.mock.responses import responses_body, responses_stream
from assay.mock.script import (
    JSON_CONTENT_TYPE,
    SSE_CONTENT_TYPE,
    Answer,
    BodyScript,
    Ending,
    StreamScript,
    error_object,
)
from assay.mock.transcriptions import TranscriptionAsk, read_transcription, transcription_body
from assay.spec.endpoint import Carries, Endpoint

_HTTP_FAULTS = {
    "http_429": (429, "rate limit reached (injected by the mock)", "rate_limit_error"),
    "http_500": (500, "internal server error (injected by the mock)", "InternalServerError"),
    "http_503": (503, "service unavailable (injected by the mock)", "ServiceUnavailableError"),
}
_PROXY_PAGE = (
    b"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
    b"<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n"
    b"</body>\r\n</html>\r\n"
)


class MockStats:
    """Counters of what the mock served; one per server process."""

    def __init__(self) -> None:
        self.requests = 0
        self.faults: Counter[str] = Counter()
        self.faults_not_applicable: Counter[str] = Counter()

    def snapshot(self) -> dict[str, Any]:
        """A JSON-ready copy: requests served, faults injected, rate-chosen faults skipped."""
        return {
            "requests": self.requests,
            "faults": dict(self.faults),
            "faults_not_applicable": dict(self.faults_not_applicable),
        }


class MockService:
    """The state of one mock server process: config, samplers, counters, the closing signal.

    Each model of `config.models` has a sampler of its own (its latency model, its own seeded
    draws); a request naming any other model is answered with `config.latency`. `sleep` waits
    out every latency the answers play.
    """

    def __init__(
        self,
        config: MockConfig,
        counters: ServedCounters | None = None,
        *,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self.config = config
        self.stats = MockStats()
        self._served_names = config.served_names
        # Each model's counters by its index; a name the mock does not list counts as its own.
        self._counter_index = {name: n for n, name in enumerate(self._served_names)}
        self.counters = (
            counters if counters is not None else ServedCounters(models=len(self._served_names))
        )
        if self.counters.models != len(self._served_names):
            raise ValueError(
                f"counters for {self.counters.models} models; the mock serves "
                f"{len(self._served_names)}"
            )
        self._tokenizer = BuiltinTokenizer()
        self._sampler = LatencySampler(config.latency, config.seed)
        self._samplers = {
            model.name: LatencySampler(model.latency, config.seed + 1 + n)
            for n, model in enumerate(config.models)
        }
        self._sleep = sleep
        self._request_counter = itertools.count()
        self._ids = itertools.count(1)
        self._id_prefix = f"{os.getpid():x}"
        self._started = int(time.time())
        self._closing = asyncio.Event()
        self._tool_pieces = self._tokenizer.pieces(BAD_TOOL_ARGUMENTS)
        self._recording: int | None = None
        self._load = ServerLoad(config.server) if config.server.bounded else None
        if config.record_requests is not None:
            # O_APPEND: each line is one write, whole, even with several workers on one file.
            self._recording = os.open(
                config.record_requests, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644
            )

    def application(self, client_max_size: int) -> web.Application:
        """The aiohttp application serving every route of the mock, reading bodies up to
        `client_max_size` bytes (HTTP 413 beyond)."""
        app = web.Application(client_max_size=client_max_size)
        for endpoint in Endpoint:
            app.router.add_post(endpoint.path, self._handler(endpoint))
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/health", self._health)
        app.router.add_get("/mock/stats", self._stats)
        app.router.add_get("/metrics", self._metrics)
        app.on_shutdown.append(self._on_shutdown)
        app.on_response_prepare.append(_echo_request_id)
        return app

    def sampler_for(self, model: str) -> LatencySampler:
        """The latency sampler that answers a request naming `model`: the served model's own,
        or the mock's latency for `model_name` and for a model it does not list (the mock is
        lenient: it answers any name)."""
        return self._samplers.get(model, self._sampler)

    def _handler(self, api: Endpoint) -> Any:
        async def handle(request: web.Request) -> web.StreamResponse:
            return await self._serve(request, api)

        return handle

    async def _on_shutdown(self, app: web.Application) -> None:
        self._closing.set()
        if self._recording is not None:
            os.close(self._recording)
            self._recording = None

    def _record(self, request: web.Request, raw: bytes, answer_id: str) -> None:
        try:
            body: Any = orjson.loads(raw)
        except orjson.JSONDecodeError:
            body = raw.decode("utf-8", "replace")
        self._record_line(request, body, answer_id)

    def _record_line(self, request: web.Request, body: Any, answer_id: str | None) -> None:
        assert self._recording is not None
        line = {
            "path": request.path,
            "request_id": request.headers.get(REQUEST_ID_HEADER),
            "traceparent": request.headers.get(TRACEPARENT_HEADER),
            # The id the answer carries when it is an answer (an error status carries none).
            "answer_id": answer_id,
            "received_ns": time.monotonic_ns(),
            "body": body,
        }
        os.write(self._recording, orjson.dumps(line) + b"\n")

    async def _health(self, request: web.Request) -> web.Response:
        return web.Response(status=200)

    async def _stats(self, request: web.Request) -> web.Response:
        return _json(self.stats.snapshot())

    async def _metrics(self, request: web.Request) -> web.Response:
        text = self.counters.render(self._served_names, self.config.metrics_scale)
        if self.config.gpu_watts is not None:
            text += "\n".join(gpu_lines(self.config.gpu_watts)) + "\n"
        return web.Response(text=text, content_type="text/plain", charset="utf-8")

    async def _models(self, request: web.Request) -> web.Response:
        return _json(self.config.model_list(self._started))

    async def _serve(self, request: web.Request, api: Endpoint) -> web.StreamResponse:
        carries = api.traits.carries
        if carries is Carries.audio:
            return await self._serve_transcription(request)  # a multipart upload, not JSON
        response_id = f"{self._id_prefix}{next(self._ids):08x}"
        try:
            raw = await request.read()
            if self._recording is not None:
                self._record(request, raw, answer_id(api, response_id))
            body = load_body(raw)
            ask: GenerationAsk | EmbeddingAsk | RankingAsk
            match carries:
                case Carries.inputs:
                    ask = read_embedding(body, self._tokenizer, self.config.model_name)
                case Carries.documents:
                    ask = read_ranking(api, body, self._tokenizer, self.config.model_name)
                case Carries.messages | Carries.prompt:
                    ask = read_generation(api, body, self._tokenizer, self.config.model_name)
                case _:
                    assert_never(carries)
            stream = isinstance(ask, GenerationAsk) and ask.stream
            fault = self._choose_fault(request, api, stream)
        except (BadRequest, ConfigError) as error:
            return _error_response(400, str(error), "BadRequestError")
        return await self._admitted(
            api,
            fault,
            stream,
            lambda fault: self._answer_with(request, api, ask, stream, fault, response_id),
        )

    async def _admitted(
        self,
        api: Endpoint,
        fault: FaultSpec | None,
        stream: bool,
        answer: Callable[[FaultSpec | None], Awaitable[web.StreamResponse]],
    ) -> web.StreamResponse:
        """`answer` with `fault`, counted, played in a slot of the finite server when there is
        one (and gone bad when the load it found was past the stated one: dropped where the
        load's fault cannot spoil it, as `cut` cannot a body)."""
        async with nullcontext(False) if self._load is None else self._load.admitted() as faulty:
            if faulty and fault is None:
                name = self.config.server.fault_name
                fault = FaultSpec(
                    name if fault_applies(name, api, stream) else "drop",
                    self.config.fault_after_tokens,
                )
            self.stats.requests += 1
            if fault is not None:
                self.stats.faults[fault.name] += 1
                early = _early_answer(fault.name, stream)
                if early is not None:
                    return early
            return await answer(fault)

    async def _answer_with(
        self,
        request: web.Request,
        api: Endpoint,
        ask: GenerationAsk | EmbeddingAsk | RankingAsk,
        stream: bool,
        fault: FaultSpec | None,
        response_id: str,
    ) -> web.StreamResponse:
        finishes = fault is None or fault.name in FINISHED_FAULTS
        sampler = self.sampler_for(ask.model)
        model = self._counter_index.get(ask.model, 0)
        counters = self.counters
        counters.add(Served.running, 1, model)
        try:
            if not isinstance(ask, GenerationAsk):  # one body, no output tokens
                script = self._one_body(api, ask, fault, response_id)
                served = await self._play_body(request, script, 0, sampler)
                if finishes:
                    counters.finished("stop", ask.prompt_tokens, 0, model)
                return served
            answer = self._answer(ask, fault, response_id, sampler)
            if stream and fault is not None and fault.name in CUT_FAULTS:
                # Counted before playing: a stalled stream ends when the client gives up.
                counters.cut(ask.prompt_tokens, min(fault.after, len(answer.pieces)), model)
            served = await self._play_answer(request, api, ask, answer, fault, stream, sampler)
        except ConnectionResetError:
            # The client left mid-answer (a run that stopped): for aiohttp a premature
            # disconnection, which it ignores, not a handler error it logs with a traceback.
            raise asyncio.CancelledError from None
        finally:
            counters.add(Served.running, -1, model)
        if finishes:
            tokens = generated_tokens(api, answer, fault, self._tool_pieces)
            counters.finished(answer.finish_reason, ask.prompt_tokens, tokens, model)
        return served

    def _one_body(
        self,
        api: Endpoint,
        ask: EmbeddingAsk | RankingAsk,
        fault: FaultSpec | None,
        response_id: str,
    ) -> BodyScript:
        """The answer of an endpoint that answers in one body without output tokens: where a new
        one is answered (an endpoint whose body reads as another's ask is not served that
        endpoint's answer)."""
        match api:
            case Endpoint.embeddings:
                if isinstance(ask, EmbeddingAsk):
                    dimension = self.config.embedding_dimension
                    return embeddings_body(ask, dimension, fault, answer_id(api, response_id))
            case Endpoint.rerank | Endpoint.score:
                if isinstance(ask, RankingAsk):
                    return ranking_body(api, ask, response_id, fault)
            case (
                Endpoint.chat | Endpoint.completions | Endpoint.responses | Endpoint.transcriptions
            ):
                pass  # generated answers, played by `_play_answer` and `_serve_transcription`
            case _:
                assert_never(api)
        raise AssertionError(f"{api} does not answer a {type(ask).__name__}")

    async def _serve_transcription(self, request: web.Request) -> web.StreamResponse:
        """A multipart upload in, a transcript out (see `assay.mock.transcriptions`)."""
        try:
            ask = await read_transcription(request, self.config.model_name)
            response_id = f"{self._id_prefix}{next(self._ids):08x}"
            if self._recording is not None:
                self._record_line(
                    request,
                    {**ask.form, "audio_seconds": ask.audio_seconds},
                    # vLLM's stream chunks carry an id; a whole transcript is text and usage.
                    answer_id(Endpoint.transcriptions, response_id) if ask.stream else None,
                )
            fault = self._choose_fault(request, Endpoint.transcriptions, ask.stream)
        except (BadRequest, ConfigError) as error:
            return _error_response(400, str(error), "BadRequestError")
        return await self._admitted(
            Endpoint.transcriptions,
            fault,
            ask.stream,
            lambda fault: self._transcribe(request, ask, fault, response_id),
        )

    async def _transcribe(
        self,
        request: web.Request,
        ask: TranscriptionAsk,
        fault: FaultSpec | None,
        response_id: str,
    ) -> web.StreamResponse:
        tokens = ask.transcript_tokens
        sampler = self.sampler_for(ask.model)
        model = self._counter_index.get(ask.model, 0)
        limited = ask.max_tokens is not None and tokens >= ask.max_tokens
        answer = Answer(
            response_id=response_id,
            created=int(time.time()),
            model=ask.model,
            pieces=output_pieces(tokens, sampler.rng, self._tokenizer),
            finish_reason="length" if limited else "stop",
            prompt_tokens=ask.prompt_tokens,
            include_usage=ask.include_usage,
        )
        counters = self.counters
        counters.add(Served.running, 1, model)
        try:
            if ask.stream:
                if fault is not None and fault.name in CUT_FAULTS:
                    counters.cut(ask.prompt_tokens, min(fault.after, len(answer.pieces)), model)
                script = choices_stream(Endpoint.transcriptions, answer, fault, self._tool_pieces)
                served = await self._play_stream(request, script, sampler)
            else:
                body = transcription_body(answer, ask.audio_seconds, fault)
                served = await self._play_body(request, body, len(answer.pieces), sampler)
        except ConnectionResetError:
            raise asyncio.CancelledError from None
        finally:
            counters.add(Served.running, -1, model)
        if fault is None or fault.name in FINISHED_FAULTS:
            written = generated_tokens(Endpoint.transcriptions, answer, fault, self._tool_pieces)
            counters.finished(answer.finish_reason, ask.prompt_tokens, written, model)
        return served

    async def _play_answer(
        self,
        request: web.Request,
        api: Endpoint,
        ask: GenerationAsk,
        answer: Answer,
        fault: FaultSpec | None,
        stream: bool,
        sampler: LatencySampler,
    ) -> web.StreamResponse:
        tool_pieces = self._tool_pieces
        n = len(answer.pieces)
        match api:
            case Endpoint.chat | Endpoint.completions if stream:
                return await self._play_stream(
                    request, choices_stream(api, answer, fault, tool_pieces), sampler
                )
            case Endpoint.chat | Endpoint.completions:
                return await self._play_body(
                    request, choices_body(api, answer, fault, tool_pieces), n, sampler
                )
            case Endpoint.responses if stream:
                return await self._play_stream(
                    request, responses_stream(answer, ask.max_tokens, fault), sampler
                )
            case Endpoint.responses:
                return await self._play_body(
                    request, responses_body(answer, ask.max_tokens, fault), n, sampler
                )
            case _:
                raise AssertionError(f"{api} answers are played by their own route")

    def _choose_fault(self, request: web.Request, api: Endpoint, stream: bool) -> FaultSpec | None:
        after = self.config.fault_after_tokens
        header = request.headers.get(FAULT_HEADER)
        if header is not None and header.strip():
            spec = parse_fault_header(header, default_after=after)
            if not fault_applies(spec.name, api, stream):
                mode = "streamed" if stream else "non-streamed"
                raise ConfigError(f"fault {spec.name!r} does not apply to POST {api.path} ({mode})")
            return spec
        if not self.config.fault_rates:
            return None
        key = request.headers.get(REQUEST_ID_HEADER) or f"#{next(self._request_counter)}"
        name = choose_fault(self.config.seed, self.config.fault_rates, key)
        if name is None:
            return None
        if not fault_applies(name, api, stream):
            self.stats.faults_not_applicable[name] += 1
            return None
        return FaultSpec(name=name, after=after)

    def _answer(
        self,
        ask: GenerationAsk,
        fault: FaultSpec | None,
        response_id: str,
        sampler: LatencySampler,
    ) -> Answer:
        name = fault.name if fault is not None else None
        length = plan_length(
            sampler.output_tokens(), ask.max_tokens, ask.ignore_eos, ask.min_tokens
        )
        tokens, finish_reason = length.tokens, length.finish_reason
        if name == "short_output":
            tokens, finish_reason = tokens // 2, "stop"
        json_mode = ask.json_mode and name != "invalid_json_output"
        pieces = output_pieces(tokens, sampler.rng, self._tokenizer, json_mode)
        tool_pieces = None
        if ask.tool_arguments is not None:
            # The model calls the tool: its arguments are the output, the limit still applies.
            tool_pieces = self._tokenizer.pieces(ask.tool_arguments)
            if ask.max_tokens is not None and len(tool_pieces) > ask.max_tokens:
                tool_pieces, finish_reason = tool_pieces[: ask.max_tokens], "length"
            else:
                finish_reason = "tool_calls"
        return Answer(
            response_id=response_id,
            created=int(time.time()),
            model=ask.model,
            pieces=pieces,
            finish_reason=finish_reason,
            prompt_tokens=ask.prompt_tokens,
            include_usage=ask.include_usage,
            continuous_usage=ask.continuous_usage,
            tool_name=ask.tool_name,
            tool_pieces=tool_pieces,
        )

    async def _play_stream(
        self, request: web.Request, script: StreamScript, sampler: LatencySampler
    ) -> web.StreamResponse:
        frames = script.tokens
        if sampler.instant and script.ending is Ending.end and self._load is None:
            body = b"".join([*script.head, *frames, *script.tail])
            return web.Response(body=body, content_type=SSE_CONTENT_TYPE)
        response = web.StreamResponse(headers={"Cache-Control": "no-cache"})
        response.content_type = SSE_CONTENT_TYPE
        await response.prepare(request)
        gaps = sampler.inter_token_latencies(len(frames) - 1)
        await self._wait(sampler.time_to_first_token())
        if not gaps and self._load is None:
            await response.write(b"".join([*script.head, *frames]))
        else:
            await wait_for_tokens(self._load)
            await response.write(b"".join([*script.head, *frames[:1]]))
            for gap, frame in zip(gaps or [0.0] * (len(frames) - 1), frames[1:], strict=True):
                await self._wait(gap)
                await wait_for_tokens(self._load)
                await response.write(frame)
        if script.ending is Ending.drop:
            return await _drop(request, response)
        if script.ending is Ending.stall:
            await self._stall(script.stall_seconds)
        if script.tail:
            await response.write(b"".join(script.tail))
        await response.write_eof()
        return response

    async def _play_body(
        self, request: web.Request, script: BodyScript, tokens: int, sampler: LatencySampler
    ) -> web.StreamResponse:
        if not sampler.instant:
            gaps = sampler.inter_token_latencies(tokens - 1)
            await self._wait(sampler.time_to_first_token() + sum(gaps))
        await wait_for_tokens(self._load, tokens)
        if script.ending is Ending.end:
            return web.Response(body=script.body, content_type=JSON_CONTENT_TYPE)
        # Announce the whole body, send half of it: the client is cut off, or left waiting.
        response = web.StreamResponse()
        response.content_type = JSON_CONTENT_TYPE
        response.content_length = len(script.body)
        await response.prepare(request)
        half = len(script.body) // 2
        await response.write(script.body[:half])
        if script.ending is Ending.drop:
            return await _drop(request, response)
        await self._stall(script.stall_seconds)
        await response.write(script.body[half:])
        await response.write_eof()
        return response

    async def _wait(self, seconds: float) -> None:
        if seconds > 0:
            await self._sleep(seconds)

    async def _stall(self, seconds: float) -> None:
        """Send nothing for `seconds`, or until the server closes."""
        try:
            async with asyncio.timeout(seconds):
                await self._closing.wait()
        except TimeoutError:
            pass


async def _echo_request_id(request: web.Request, response: web.StreamResponse) -> None:
    """Answer with the request's `X-Request-Id`, or a new one, as vLLM's middleware does
    (`--enable-request-id-headers`)."""
    response.headers[REQUEST_ID_HEADER] = request.headers.get(REQUEST_ID_HEADER) or uuid.uuid4().hex


def _early_answer(fault: str, stream: bool) -> web.Response | None:
    """The answer of a fault that needs no generation: a status, a proxy page, no body."""
    if fault in _HTTP_FAULTS:
        status, message, kind = _HTTP_FAULTS[fault]
        response = _error_response(status, message, kind)
        if status == 429:
            response.headers["Retry-After"] = "1"
        return response
    if fault == "html_200":
        return web.Response(body=_PROXY_PAGE, content_type="text/html", charset="utf-8")
    if fault == "no_body":
        return web.Response(
            body=b"", content_type=SSE_CONTENT_TYPE if stream else JSON_CONTENT_TYPE
        )
    return None


async def _drop(request: web.Request, response: web.StreamResponse) -> web.StreamResponse:
    """Abort the connection: what the client already received stays, the rest never comes."""
    transport = request.transport
    if transport is not None:
        # Let what was written reach the socket first; abort() discards the write buffer.
        for _ in range(100):
            if transport.get_write_buffer_size() == 0:
                break
            await asyncio.sleep(0.001)
        transport.abort()
    return response


def _json(payload: Any, status: int = 200) -> web.Response:
    return web.Response(body=orjson.dumps(payload), status=status, content_type=JSON_CONTENT_TYPE)


def _error_response(status: int, message: str, kind: str) -> web.Response:
    return _json({"error": error_object(message, kind, status)}, status=status)


__all__ = ["MockService", "MockStats"]
