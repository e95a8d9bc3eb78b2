"""What an answer consists of, one type per kind: text, vectors or scores.

`GenerationResponse.answer` holds exactly one of them, so an embeddings answer with text, or a
text answer with scores, cannot be built. Each kind carries its own summary, and its `kind` is
the endpoint's `Answer` trait: a new kind is a new member of both, and every exhaustive `match`
over them stops at type-checking until it decides.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal, TypeAlias, final

from pydantic import BaseModel, ConfigDict, Field

from assay.spec.endpoint import Answer


class ToolCall(BaseModel):
    """One tool call; `arguments` is the raw JSON text the server produced."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    index: int = 0
    id: str | None = None
    name: str | None = None
    arguments: str = ""


class EmbeddingSummary(BaseModel):
    """What an embeddings answer held; the vectors themselves are not kept."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    count: int
    dimension: int
    all_finite: bool
    consistent_dimension: bool = True


class ScoreSummary(BaseModel):
    """What a rerank or score answer held; the scores themselves are not kept.

    `lowest_index`/`highest_index` are the document indices the results named (None when there
    are no results), `repeated_index` the first index named twice, `non_finite` how many
    scores were NaN or infinite.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    count: int
    lowest_index: int | None = None
    highest_index: int | None = None
    repeated_index: int | None = None
    non_finite: int = 0


@final
class TextAnswer(BaseModel):
    """Generated output: text, reasoning and tool calls (any of them may be empty until the
    validators judge it)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # The flat keys records.jsonl stores this kind under, and the field each one holds.
    STORED_AS: ClassVar[dict[str, str]] = {
        "text": "text",
        "reasoning": "reasoning",
        "tool_calls": "tool_calls",
    }

    kind: Literal[Answer.text] = Answer.text
    text: str = ""
    reasoning: str = ""
    tool_calls: tuple[ToolCall, ...] = ()


@final
class Vectors(BaseModel):
    """An embeddings answer: the summary of its vectors (None when the answer held no `data`
    list to summarise). How many its request expected travels on `RequestEcho`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    STORED_AS: ClassVar[dict[str, str]] = {"embeddings": "summary"}

    kind: Literal[Answer.vectors] = Answer.vectors
    summary: EmbeddingSummary | None = None


@final
class Scores(BaseModel):
    """A rerank or score answer: the summary of its results (None when there was none to
    read). How many documents and results its request expected travels on `RequestEcho`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    STORED_AS: ClassVar[dict[str, str]] = {"scores": "summary"}

    kind: Literal[Answer.scores] = Answer.scores
    summary: ScoreSummary | None = None


AnyAnswer: TypeAlias = TextAnswer | Vectors | Scores
"""The sealed union of answer kinds: the one place it is spelled (`get_args` lists them)."""

AnswerBody = Annotated[AnyAnswer, Field(discriminator="kind")]
"""The sealed union of answer kinds, told apart by `kind`."""


def answer_type(kind: Answer) -> type[AnyAnswer]:
    """The type of an answer of `kind`.

    >>> answer_type(Answer.vectors).__name__
    'Vectors'
    """
    match kind:
        case Answer.text:
            return TextAnswer
        case Answer.vectors:
            return Vectors
        case Answer.scores:
            return Scores


__all__ = [
    "AnswerBody",
    "AnyAnswer",
    "EmbeddingSummary",
    "ScoreSummary",
    "Scores",
    "TextAnswer",
    "ToolCall",
    "Vectors",
    "answer_type",
]
