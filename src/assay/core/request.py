"""What assay asks a server for: one generation request, endpoint-neutral."""

from __future__ import annotations

from typing import Self

from pydantic import BaseModel, ConfigDict, JsonValue, model_validator

from assay.spec.endpoint import Answer, Endpoint


class RequestEcho(BaseModel):
    """The few request facts validators need, carried on every response.

    A validator sees only the response (`Callable[[R], Result[R, UnusableResponse]]`), so what it
    must compare against (the token count asked for, JSON mode, the number of embedding inputs,
    how many choices `n` asked for, how many documents a rerank or score request carried and
    how many results it asked for) travels with the response instead of the whole request and
    its prompt.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_output_tokens: int | None = None
    ignore_eos: bool = False
    json_mode: bool = False
    json_schema: dict[str, JsonValue] | None = None
    expected_embeddings: int | None = None
    choices: int = 1
    documents: int | None = None
    expected_results: int | None = None


class GenerationRequest(BaseModel):
    """One request to one endpoint.

    `prompt` is the text for completions, responses and embeddings (a tuple for a batch of
    embedding inputs) and the query of rerank and score; `messages` is the conversation for
    chat; `documents` are the texts rerank and score judge against the query. `extra_body`
    fields are merged into the JSON body last, so a user can set anything the server accepts. A
    request without what its endpoint sends (chat: messages or a text prompt; responses:
    either; completions and embeddings: a prompt; rerank and score: a text query and at least
    one document) is refused when it is built, not found out when it is sent.

    >>> r = GenerationRequest(request_id="r1", endpoint=Endpoint.chat, model="m",
    ...                       messages=({"role": "user", "content": "hi"},), max_output_tokens=8)
    >>> r.echo().max_output_tokens
    8
    >>> GenerationRequest(request_id="r2", endpoint=Endpoint.chat, model="m")
    Traceback (most recent call last):
      ...
    pydantic_core._pydantic_core.ValidationError: 1 validation error for GenerationRequest
      Value error, chat request 'r2' has neither messages nor a text prompt ...
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    request_id: str
    endpoint: Endpoint
    model: str
    prompt: str | tuple[str, ...] | None = None
    messages: tuple[dict[str, JsonValue], ...] | None = None
    documents: tuple[str, ...] | None = None
    max_output_tokens: int | None = None
    ignore_eos: bool = False
    stream: bool = True
    prompt_tokens: int | None = None
    extra_body: dict[str, JsonValue] = {}
    # What the request carries besides text: the images in its messages (None when its load
    # carries none; 0 for a request of an image load that drew none), the audio seconds in
    # its messages or upload, and the audio file a transcription uploads (WAV bytes).
    images: int | None = None
    audio_seconds: float = 0.0
    audio_file: bytes | None = None

    @model_validator(mode="after")
    def _has_what_its_endpoint_sends(self) -> Self:
        missing = self._missing_input()
        if missing is not None:
            raise ValueError(f"{self.endpoint.value} request {self.request_id!r} has {missing}")
        return self

    def _missing_input(self) -> str | None:
        match self.endpoint:
            case Endpoint.chat:
                if self.messages is None and not isinstance(self.prompt, str):
                    return "neither messages nor a text prompt"
            case Endpoint.responses:
                if self.messages is None and self.prompt is None:
                    return "neither messages nor a prompt"
            case Endpoint.completions | Endpoint.embeddings:
                if self.prompt is None:
                    return "no prompt"
            case Endpoint.rerank | Endpoint.score:
                if not isinstance(self.prompt, str):
                    return "no text query"
                if not self.documents:
                    return "no documents"
            case Endpoint.transcriptions:
                if not self.audio_file:
                    return "no audio file"
        return None

    def json_mode(self) -> bool:
        """Whether the body asks for JSON output (`response_format` of json_object/json_schema)."""
        fmt = _format_of(self.extra_body)
        json_object = isinstance(fmt, dict) and fmt.get("type") == "json_object"
        return json_object or self.json_schema() is not None

    def json_schema(self) -> dict[str, JsonValue] | None:
        """The JSON schema asked for with `response_format: {type: json_schema}` (or, on
        `/v1/responses`, `text.format: {type: json_schema, schema}`), if any."""
        fmt = _format_of(self.extra_body)
        if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
            spec = fmt.get("json_schema", fmt)  # Responses puts `schema` on the format itself
            if isinstance(spec, dict):
                schema = spec.get("schema")
                if isinstance(schema, dict):
                    return schema
            return {}
        return None

    def echo(self) -> RequestEcho:
        """The request facts that travel with the response for validation."""
        # Nearly every request is plain: no JSON mode, nothing a kind of answer expects; one
        # shared frozen echo per (endpoint, limit, ignore_eos) instead of a model per request.
        plain = not self.extra_body
        key = (self.endpoint, self.max_output_tokens, self.ignore_eos)
        if plain:
            shared = _PLAIN_ECHOES.get(key)
            if shared is not None:
                return shared
        expected: int | None = None
        documents: int | None = None
        results: int | None = None
        match self.endpoint.traits.answer:
            case Answer.text:
                if plain:
                    if len(_PLAIN_ECHOES) >= PLAIN_ECHOES_KEPT:
                        _PLAIN_ECHOES.clear()
                    echo = RequestEcho(
                        max_output_tokens=self.max_output_tokens, ignore_eos=self.ignore_eos
                    )
                    _PLAIN_ECHOES[key] = echo
                    return echo
            case Answer.vectors:
                expected = len(self.prompt) if isinstance(self.prompt, tuple) else 1
            case Answer.scores:
                # Unknown for an answer judged without its request: the checks that need the
                # documents' count are then skipped.
                if self.documents is not None:
                    documents = len(self.documents)
                    results = _result_count(self.endpoint, documents, self.extra_body)
        return RequestEcho(
            max_output_tokens=self.max_output_tokens,
            ignore_eos=self.ignore_eos,
            json_mode=self.json_mode(),
            json_schema=self.json_schema(),
            expected_embeddings=expected,
            choices=_choice_count(self.extra_body),
            documents=documents,
            expected_results=results,
        )


# The echoes of text requests without extra body fields (see `GenerationRequest.echo`), by
# endpoint, output limit and `ignore_eos`; emptied whenever it reaches `PLAIN_ECHOES_KEPT`.
PLAIN_ECHOES_KEPT = 1024
_PLAIN_ECHOES: dict[tuple[Endpoint, int | None, bool], RequestEcho] = {}


def _choice_count(extra_body: dict[str, JsonValue]) -> int:
    """How many answers one request asks for (`n`); usage then covers all of them."""
    n = extra_body.get("n")
    return n if type(n) is int and n > 1 else 1


def _result_count(endpoint: Endpoint, documents: int, extra_body: dict[str, JsonValue]) -> int:
    """How many results a scores answer must hold: one per document, or on `/v1/rerank` the
    best `top_n` of them when `top_n` is a positive number below the documents' (vLLM's rule:
    0, the default, returns them all).

    >>> _result_count(Endpoint.rerank, 8, {"top_n": 3}), _result_count(Endpoint.score, 8, {})
    (3, 8)
    """
    top_n = extra_body.get("top_n")
    if endpoint is Endpoint.rerank and type(top_n) is int and 0 < top_n < documents:
        return top_n
    return documents


def _format_of(extra_body: dict[str, JsonValue]) -> JsonValue:
    """`response_format` (chat, completions) or `text.format` (responses)."""
    fmt = extra_body.get("response_format")
    if fmt is None:
        text = extra_body.get("text")
        if isinstance(text, dict):
            fmt = text.get("format")
    return fmt
