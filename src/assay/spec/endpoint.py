"""The endpoints assay benchmarks, and every fact about one that another layer decides by.

An endpoint is known to the rest of the house only through its traits: the path, what its body
carries, what kind of answer it returns, whether it streams and how a stream ends. Each trait is
decided for every endpoint in one exhaustive `match` (`_traits_of`), and the layers above read a
trait or `match` exhaustively on one of the closed sets below (`Answer`, `Carries`). Adding an
endpoint is therefore a type error until every place that must decide has decided: the traits
here, the handler that reads its answer (`handlers/by_endpoint.py`), and what a request for it
must hold (`core/request.py`). Adding an `Answer` kind likewise stops at every decision made per
kind of answer: the default validator chain, the validators of one kind, the metrics; a new
`Carries` at every place that fills a request body.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Final


class Endpoint(StrEnum):
    """The OpenAI-compatible endpoints assay benchmarks."""

    completions = "completions"
    chat = "chat"
    responses = "responses"
    embeddings = "embeddings"
    rerank = "rerank"
    score = "score"
    transcriptions = "transcriptions"

    @property
    def path(self) -> str:
        """The URL path below the server's base URL.

        >>> Endpoint.chat.path
        '/v1/chat/completions'
        """
        return _TRAITS[self].path

    @property
    def traits(self) -> EndpointTraits:
        """Everything the other layers decide by (see `EndpointTraits`).

        >>> Endpoint.embeddings.traits.answer
        <Answer.vectors: 'vectors'>
        """
        return _TRAITS[self]


class Answer(StrEnum):
    """What a usable answer consists of; decides the default validator chain and the metrics.

    `text`: generated output tokens (text, tool calls or reasoning), with token timings, a
    `finish_reason` and output-token usage. `vectors`: one embedding per input, no output tokens,
    the end-to-end latency is the only timing. `scores`: one relevance score per document (a
    ranking, or the scores of query-document pairs), no output tokens, the end-to-end latency is
    the only timing.
    """

    text = "text"
    vectors = "vectors"
    scores = "scores"

    @property
    def traits(self) -> AnswerTraits:
        """What the other layers say and decide by about answers of this kind.

        >>> Answer.scores.traits.noun
        'a ranking'
        """
        return _ANSWER_TRAITS[self]


@dataclass(frozen=True, slots=True)
class AnswerTraits:
    """The facts about one kind of answer that other layers decide or word by.

    - `generates`: whether it is generated tokens (output-token limits, EOS, token metrics).
    - `noun`: one answer of it in a sentence ("--max-tokens: an embedding has no output tokens").
    - `no_output_words`: how the console's step summary opens when its answers held no output
      tokens.
    """

    generates: bool
    noun: str
    no_output_words: str


def _answer_traits_of(answer: Answer) -> AnswerTraits:
    embeddings = "Embeddings: no output tokens; "
    match answer:
        case Answer.text:
            # A text step whose every answer was an embedding is worded as one of embeddings.
            return AnswerTraits(True, "its answer", embeddings)
        case Answer.vectors:
            return AnswerTraits(False, "an embedding", embeddings)
        case Answer.scores:
            words = "Rankings (scored documents): no output tokens; "
            return AnswerTraits(False, "a ranking", words)


_ANSWER_TRAITS: Final = {answer: _answer_traits_of(answer) for answer in Answer}


class Carries(StrEnum):
    """What a request body carries, which decides how a data source fills a request.

    `messages`: a conversation (`messages`); a plain text prompt becomes one user message.
    `prompt`: one text prompt (`prompt` / `input`), or a conversation where the endpoint takes one.
    `inputs`: one text or a batch of texts to embed (`input`).
    `documents`: a query and the documents to score against it (`query` + `documents` on
    `/v1/rerank`, `text_1` + `text_2` on `/v1/score`).
    `audio`: one audio file, uploaded as `multipart/form-data` beside the form fields.
    """

    messages = "messages"
    prompt = "prompt"
    inputs = "inputs"
    documents = "documents"
    audio = "audio"


@dataclass(frozen=True, slots=True)
class EndpointTraits:
    """The facts about one endpoint that other layers decide by.

    - `path`: below the server's base URL.
    - `carries`: what its request body carries (see `Carries`).
    - `answer`: what a usable answer consists of (see `Answer`).
    - `streams`: whether it can answer as a stream (SSE); when not, `stream` is never sent true.
    - `terminal_marker`: what ends a complete stream (`[DONE]`, `response.completed`), if it
      streams.
    - `streams_finish_reason`: whether its stream states why the answer stopped (a
      `finish_reason` on a chunk), so a finished stream without one was cut. A `/v1/responses`
      stream ends with a status instead (assay derives the finish_reason from it).
    - `takes_conversation`: whether a request may carry a multi-turn conversation, so sessions
      can run on it.
    - `limit_keys`: the body fields that set its output-token limit (none unless it generates).
    """

    path: str
    carries: Carries
    answer: Answer
    streams: bool
    terminal_marker: str | None
    streams_finish_reason: bool
    takes_conversation: bool
    limit_keys: tuple[str, ...] = ()

    @property
    def generates(self) -> bool:
        """Whether the answer is generated tokens (output-token limits, EOS, token metrics)."""
        return self.answer.traits.generates

    @property
    def takes_images(self) -> bool:
        """Whether a request may carry images (as `image_url` parts of a chat message)."""
        match self.carries:
            case Carries.messages:
                return True
            case Carries.prompt | Carries.inputs | Carries.documents | Carries.audio:
                return False

    @property
    def takes_audio(self) -> bool:
        """Whether a request may carry audio (an `input_audio` part, or the uploaded file)."""
        match self.carries:
            case Carries.messages | Carries.audio:
                return True
            case Carries.prompt | Carries.inputs | Carries.documents:
                return False

    @property
    def needs_audio(self) -> bool:
        """Whether a request is nothing without audio (a transcription's upload)."""
        match self.carries:
            case Carries.audio:
                return True
            case Carries.messages | Carries.prompt | Carries.inputs | Carries.documents:
                return False


def _traits_of(endpoint: Endpoint) -> EndpointTraits:
    match endpoint:
        case Endpoint.completions:
            return _streamed("/v1/completions", Carries.prompt, "[DONE]", "max_tokens")
        case Endpoint.chat:
            path, limits = "/v1/chat/completions", ("max_tokens", "max_completion_tokens")
            return _streamed(path, Carries.messages, "[DONE]", *limits)
        case Endpoint.responses:
            marker = "response.completed"
            return _streamed(
                "/v1/responses", Carries.prompt, marker, "max_output_tokens", reason=False
            )
        case Endpoint.embeddings:
            return _answered_whole("/v1/embeddings", Carries.inputs, Answer.vectors)
        case Endpoint.rerank:
            return _answered_whole("/v1/rerank", Carries.documents, Answer.scores)
        case Endpoint.score:
            return _answered_whole("/v1/score", Carries.documents, Answer.scores)
        case Endpoint.transcriptions:
            # vLLM's stream is `transcription.chunk` objects ended by `[DONE]` (a finish_reason
            # on the last choice); OpenAI's is `transcript.text.delta` events ended by
            # `transcript.text.done`, with no finish_reason: neither is required of a stream.
            path, limit = "/v1/audio/transcriptions", "max_completion_tokens"
            return _streamed(path, Carries.audio, "[DONE]", limit, reason=False, conversation=False)


def _streamed(
    path: str,
    carries: Carries,
    marker: str,
    *limits: str,
    reason: bool = True,
    conversation: bool = True,
) -> EndpointTraits:
    """An endpoint whose text answer may stream, ended by `marker`, its output limit set by the
    body fields `limits`, with a finish_reason (`reason`) and taking a conversation
    (`conversation`) unless told otherwise."""
    return EndpointTraits(path, carries, Answer.text, True, marker, reason, conversation, limits)


def _answered_whole(path: str, carries: Carries, answer: Answer) -> EndpointTraits:
    """An endpoint that never streams and takes no conversation."""
    return EndpointTraits(path, carries, answer, False, None, False, False)


_TRAITS: Final = {endpoint: _traits_of(endpoint) for endpoint in Endpoint}


__all__ = ["Answer", "AnswerTraits", "Carries", "Endpoint", "EndpointTraits"]
