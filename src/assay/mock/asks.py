"""What the mock reads from a request body: limits, streaming options, JSON mode, prompt text,
and the query and documents of a rerank or score request.

Read leniently, like real servers: unknown keys are ignored; a body that is not a JSON object or
a limit that is not a number is a 400 (`BadRequest`), never a crash.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from assay.data.tokenizer import BuiltinTokenizer
from assay.mock.media import MediaRejected, audio_tokens, image_tokens
from assay.spec.endpoint import Endpoint


class BadRequest(Exception):
    """The request body is unusable; the mock answers 400 with this message."""


@dataclass(frozen=True, slots=True)
class GenerationAsk:
    """The facts of one generation request the mock acts on."""

    model: str
    stream: bool
    max_tokens: int | None
    min_tokens: int
    ignore_eos: bool
    include_usage: bool
    continuous_usage: bool
    json_mode: bool
    tool_name: str | None
    prompt_tokens: int
    tool_arguments: str | None = None


@dataclass(frozen=True, slots=True)
class EmbeddingAsk:
    """The inputs of one embeddings request, with their token counts."""

    model: str
    inputs: tuple[str, ...]
    prompt_tokens: int
    dimensions: int | None
    base64: bool


@dataclass(frozen=True, slots=True)
class RankingAsk:
    """The pairs of one rerank or score request: each document against its query.

    `queries[i]` is the query document `i` is scored against (rerank and a one-text `text_1`:
    the same query for all); `top_n` is rerank's cut (0: every document).
    """

    model: str
    queries: tuple[str, ...]
    documents: tuple[str, ...]
    top_n: int
    prompt_tokens: int


def load_body(raw: bytes) -> dict[str, Any]:
    """The JSON object of a request body."""
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as error:
        raise BadRequest(f"request body is not valid JSON: {error}") from None
    if not isinstance(body, dict):
        raise BadRequest(f"request body must be a JSON object, got {type(body).__name__}")
    return body


def read_generation(
    api: Endpoint, body: dict[str, Any], tokenizer: BuiltinTokenizer, default_model: str
) -> GenerationAsk:
    """The generation facts of a chat, completions or responses body."""
    match api:
        case Endpoint.chat:
            max_tokens = _limit(body, "max_completion_tokens")
            if max_tokens is None:
                max_tokens = _limit(body, "max_tokens")
            prompt_tokens = sum(_count_message(m, tokenizer) for m in _list(body, "messages"))
            response_format = body.get("response_format")
        case Endpoint.completions:
            max_tokens = _limit(body, "max_tokens")
            prompt_tokens = _count_content(body.get("prompt"), tokenizer)
            response_format = body.get("response_format")
        case Endpoint.responses:
            max_tokens = _limit(body, "max_output_tokens")
            prompt_tokens = _count_content(body.get("input"), tokenizer) + _count_content(
                body.get("instructions"), tokenizer
            )
            text = body.get("text")
            response_format = text.get("format") if isinstance(text, dict) else None
        case _:
            raise BadRequest(f"{api} requests carry no generation parameters")
    stream_options = body.get("stream_options")
    options = stream_options if isinstance(stream_options, dict) else {}
    return GenerationAsk(
        model=_model(body, default_model),
        stream=body.get("stream") is True,
        max_tokens=max_tokens,
        min_tokens=_limit(body, "min_tokens") or 0,
        ignore_eos=body.get("ignore_eos") is True,
        include_usage=options.get("include_usage") is True,
        continuous_usage=options.get("continuous_usage_stats") is True,
        json_mode=_format_type(response_format) in {"json_object", "json_schema"},
        tool_name=_first_tool_name(body.get("tools")),
        prompt_tokens=prompt_tokens,
        tool_arguments=_tool_arguments(body) if api is Endpoint.chat else None,
    )


def read_embedding(
    body: dict[str, Any], tokenizer: BuiltinTokenizer, default_model: str
) -> EmbeddingAsk:
    """The inputs of an embeddings body: a string, strings, token ids or lists of token ids."""
    raw = body.get("input")
    items: list[Any] = raw if isinstance(raw, list) else [raw]
    if raw is None or not items:
        raise BadRequest("embeddings request without `input`")
    if all(isinstance(item, int) for item in items):
        items = [items]  # one input given as token ids
    inputs: list[str] = []
    prompt_tokens = 0
    for item in items:
        if isinstance(item, str):
            inputs.append(item)
            prompt_tokens += tokenizer.count(item)
        elif isinstance(item, list) and all(isinstance(i, int) for i in item):
            inputs.append(" ".join(map(str, item)))
            prompt_tokens += len(item)
        else:
            raise BadRequest("embeddings `input` must be strings or lists of token ids")
    dimensions = _limit(body, "dimensions")
    return EmbeddingAsk(
        model=_model(body, default_model),
        inputs=tuple(inputs),
        prompt_tokens=prompt_tokens,
        dimensions=dimensions or None,
        base64=body.get("encoding_format") == "base64",
    )


def read_ranking(
    api: Endpoint, body: dict[str, Any], tokenizer: BuiltinTokenizer, default_model: str
) -> RankingAsk:
    """The pairs of a rerank (`query`, `documents`, `top_n`) or score (`text_1`, `text_2`) body.

    `/v1/score` takes, as vLLM does, one `text_1` against every `text_2`, or two lists of one
    length scored pair by pair. Prompt tokens count every pair, the query once per document, as
    a cross-encoder reads them.
    """
    queries, documents, top_n = _pairs(api, body)
    counts: dict[str, int] = {}
    prompt_tokens = 0
    for query, document in zip(queries, documents, strict=True):
        for text in (query, document):
            count = counts.get(text)
            if count is None:
                count = counts[text] = tokenizer.count(text)
            prompt_tokens += count
    return RankingAsk(
        model=_model(body, default_model),
        queries=tuple(queries),
        documents=tuple(documents),
        top_n=top_n,
        prompt_tokens=prompt_tokens,
    )


def _pairs(api: Endpoint, body: dict[str, Any]) -> tuple[list[str], list[str], int]:
    """The query of each document, the documents, and rerank's `top_n` (0 for all)."""
    match api:
        case Endpoint.rerank:
            query = body.get("query")
            if not isinstance(query, str):
                raise BadRequest("rerank request without a text `query`")
            documents = _texts(body.get("documents"), "documents")
            return [query] * len(documents), documents, _limit(body, "top_n") or 0
        case Endpoint.score:
            documents = _texts(body.get("text_2"), "text_2")
            first = body.get("text_1")
            if isinstance(first, str):
                return [first] * len(documents), documents, 0
            queries = _texts(first, "text_1")
            if len(queries) == 1:
                return queries * len(documents), documents, 0
            if len(queries) != len(documents):
                raise BadRequest(
                    f"`text_1` holds {len(queries)} texts and `text_2` {len(documents)}: "
                    "one text, or as many as `text_2`"
                )
            return queries, documents, 0
        case _:
            raise BadRequest(f"{api} requests carry no query and documents")


def _texts(value: object, key: str) -> list[str]:
    """A text or a non-empty list of texts."""
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise BadRequest(f"`{key}` must be a text or a non-empty list of texts")
    return value


def _model(body: dict[str, Any], default: str) -> str:
    model = body.get("model")
    return model if isinstance(model, str) and model else default


def _limit(body: dict[str, Any], key: str) -> int | None:
    value = body.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise BadRequest(f"`{key}` must be an integer >= 0, got {value!r}")
    return value


def _list(body: dict[str, Any], key: str) -> list[Any]:
    value = body.get(key)
    if not isinstance(value, list):
        raise BadRequest(f"`{key}` must be a list, got {type(value).__name__}")
    return value


def _format_type(value: object) -> object:
    return value.get("type") if isinstance(value, dict) else None


def _first_tool_name(tools: object) -> str | None:
    if not isinstance(tools, list) or not tools or not isinstance(tools[0], dict):
        return None
    function = tools[0].get("function")
    name = function.get("name") if isinstance(function, dict) else tools[0].get("name")
    return name if isinstance(name, str) else None


def _tool_arguments(body: dict[str, Any]) -> str | None:
    """The JSON arguments the mock calls the first tool with; None when it answers in text
    (no tools, or `tool_choice: "none"`). One value per declared parameter, of its type."""
    tools = body.get("tools")
    if _first_tool_name(tools) is None or body.get("tool_choice") == "none":
        return None
    assert isinstance(tools, list)  # _first_tool_name checked it
    function = tools[0].get("function")
    spec = function if isinstance(function, dict) else tools[0]
    parameters = spec.get("parameters")
    properties = parameters.get("properties") if isinstance(parameters, dict) else None
    arguments: dict[str, Any] = {}
    if isinstance(properties, dict):
        for name, schema in properties.items():
            kind = schema.get("type") if isinstance(schema, dict) else None
            arguments[str(name)] = _ARGUMENT_VALUES.get(kind if isinstance(kind, str) else "", "x")
    return orjson.dumps(arguments).decode()


_ARGUMENT_VALUES: dict[str, Any] = {
    "string": "Paris",
    "integer": 3,
    "number": 2.5,
    "boolean": True,
    "array": [],
    "object": {},
    "null": None,
}


def _count_message(message: object, tokenizer: BuiltinTokenizer) -> int:
    if not isinstance(message, dict):
        raise BadRequest("each message must be an object")
    return _count_content(message.get("content"), tokenizer)


def _count_content(content: object, tokenizer: BuiltinTokenizer) -> int:
    """Tokens of a prompt in any of its shapes: text, text parts, items, or token ids."""
    match content:
        case None:
            return 0
        case str():
            return tokenizer.count(content)
        case int():
            return 1
        case list():
            return sum(_count_content(part, tokenizer) for part in content)
        case {"text": str() as text}:
            return tokenizer.count(text)
        case {"type": "image_url", "image_url": image}:
            url = image.get("url") if isinstance(image, dict) else image
            return _charged(image_tokens, url)
        case {"type": "input_audio", "input_audio": audio}:
            return _charged(audio_tokens, audio)
        case {"content": inner}:
            return _count_content(inner, tokenizer)
        case _:
            return 0


def _charged(rule: Callable[[object], int], part: object) -> int:
    try:
        return rule(part)
    except MediaRejected as error:
        raise BadRequest(str(error)) from None


__all__ = [
    "BadRequest",
    "EmbeddingAsk",
    "GenerationAsk",
    "RankingAsk",
    "load_body",
    "read_embedding",
    "read_generation",
    "read_ranking",
]
