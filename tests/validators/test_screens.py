"""Screens: a built-in validator's cheap test never passes an answer the validator would reject,
and `judge` gives the same verdict whether it honours the screens or calls every validator."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import JsonValue
from returns.result import Failure, Result, Success

from assay.core import (
    DiagnosticCode,
    EmbeddingSummary,
    Endpoint,
    GenerationResponse,
    RequestEcho,
    ResponseTiming,
    ScoreSummary,
    TokenSource,
    ToolCall,
    UnusableResponse,
    Usage,
)
from assay.core.answer import AnyAnswer, Scores, TextAnswer, Vectors
from assay.spec.endpoint import Answer
from assay.validators import (
    BUILTIN_VALIDATORS,
    BuiltinValidator,
    Validator,
    chain,
    default_chain,
    named_steps,
)
from assay.validators.chain import screen_of, screened, screened_steps
from assay.worker import judge
from tests.drawn_answers import answers

SCREENED = [builtin for builtin in BUILTIN_VALIDATORS if screen_of(builtin.validator) is not None]

_counts = st.sampled_from([None, -1, 0, 1, 2, 7, 15, 16, 17, 18, 19, 32, 100])
_CITY_SCHEMA: dict[str, JsonValue] = {"type": "object", "required": ["city"]}
_indices = st.sampled_from([None, -1, 0, 1, 3, 4, 7, 8])
_tool_calls = st.sampled_from(
    [
        (),
        (ToolCall(name="get_weather", arguments='{"city": "Paris"}'),),
        (ToolCall(name="get_weather", arguments='{"city": '),),
        (ToolCall(arguments="   "),),
        (ToolCall(arguments="[1, 2]"), ToolCall(index=1, arguments="{}")),
    ]
)


@st.composite
def responses(draw: st.DrawFn) -> GenerationResponse:
    """Answers of every kind: usable, empty, whitespace, truncated, zero-token, tool-call and
    reasoning-only, with usage that agrees, disagrees or cannot be true."""
    usage = draw(
        st.none()
        | st.builds(
            Usage,
            prompt_tokens=_counts,
            completion_tokens=_counts,
            reasoning_tokens=_counts,
            cached_tokens=_counts,
            total_tokens=_counts,
        )
    )
    echo = RequestEcho(
        max_output_tokens=draw(st.sampled_from([None, 1, 7, 16])),
        ignore_eos=draw(st.booleans()),
        json_mode=draw(st.booleans()),
        json_schema=draw(st.sampled_from([None, _CITY_SCHEMA])),
        expected_embeddings=draw(st.sampled_from([None, 1, 4])),
        choices=draw(st.sampled_from([1, 2])),
        documents=draw(st.sampled_from([None, 0, 4, 8])),
        expected_results=draw(st.sampled_from([None, 0, 4, 8])),
    )
    embeddings = draw(
        st.none()
        | st.builds(
            EmbeddingSummary,
            count=st.sampled_from([0, 1, 4]),
            dimension=st.sampled_from([0, 384]),
            all_finite=st.booleans(),
            consistent_dimension=st.booleans(),
        )
    )
    scores = draw(
        st.none()
        | st.builds(
            ScoreSummary,
            count=st.sampled_from([0, 1, 4, 8]),
            lowest_index=_indices,
            highest_index=_indices,
            repeated_index=_indices,
            non_finite=st.sampled_from([0, 1, 2]),
        )
    )
    endpoint = draw(st.sampled_from(list(Endpoint)))
    # The kinds whose validators look at these values get them; any other kind is drawn whole.
    kind = endpoint.traits.answer
    targeted: dict[Answer, st.SearchStrategy[AnyAnswer]] = {
        Answer.text: st.builds(
            TextAnswer,
            text=st.sampled_from(["", " ", "\n\t", "Paris", '{"city": "Paris"}', '{"city": ']),
            reasoning=st.sampled_from(["", "thinking..."]),
            tool_calls=_tool_calls,
        ),
        Answer.vectors: st.just(Vectors(summary=embeddings)),
        Answer.scores: st.just(Scores(summary=scores)),
    }
    answer = draw(targeted[kind] if kind in targeted else answers(kind))
    return GenerationResponse(
        request_id="r-screen",
        endpoint=endpoint,
        streamed=draw(st.booleans()),
        echo=echo,
        answer=answer,
        finish_reason=draw(st.sampled_from([None, "stop", "length", "tool_calls", "error"])),
        usage=usage,
        content_chunks=draw(st.sampled_from([0, 1, 7, 16])),
        streamed_tokens=draw(st.sampled_from([0, 1, 7, 15, 16, 17, 20])),
        streamed_token_source=draw(st.sampled_from(list(TokenSource))),
        terminal_seen=draw(st.booleans()),
        http_status=draw(st.sampled_from([None, 200, 500])),
        timing=ResponseTiming(send_ns=0, end_ns=1),
    )


class _Unscreened:
    """`validator` under its own name and module, without its screen: judged by calling it."""

    def __init__(self, validator: Validator[GenerationResponse]) -> None:
        self._validator = validator
        self.__name__ = getattr(validator, "__name__", "")
        self.__module__ = getattr(validator, "__module__", "")

    def __call__(
        self, response: GenerationResponse
    ) -> Result[GenerationResponse, UnusableResponse]:
        return self._validator(response)


def _unscreened(validate: Validator[GenerationResponse]) -> Validator[GenerationResponse]:
    return chain(*(_Unscreened(step) for _, step in named_steps(validate)))


CHAINS = {
    f"{endpoint}-strict={strict}-lenient={lenient}": default_chain(
        endpoint, strict, allow_missing_done=lenient
    )
    for endpoint in Endpoint
    for strict in (False, True)
    for lenient in (False, True)
} | {"every-builtin": chain(*(builtin.validator for builtin in BUILTIN_VALIDATORS))}


def test_every_builtin_has_a_screen() -> None:
    assert [builtin.name for builtin in SCREENED] == [b.name for b in BUILTIN_VALIDATORS]


@pytest.mark.parametrize("builtin", SCREENED, ids=lambda builtin: builtin.name)
@settings(max_examples=300, deadline=None)
@given(response=responses())
def test_a_passing_screen_means_the_validator_accepts_the_same_response(
    builtin: BuiltinValidator, response: GenerationResponse
) -> None:
    validator = builtin.validator
    screen = screen_of(validator)
    assert screen is not None
    if screen(response):
        result = validator(response)
        assert isinstance(result, Success)
        assert result.unwrap() is response


def test_screens_pass_the_typical_chat_answer() -> None:
    """The common case the screens are for: a complete streamed chat answer skips every call."""
    response = GenerationResponse(
        request_id="r-typical",
        endpoint=Endpoint.chat,
        streamed=True,
        echo=RequestEcho(max_output_tokens=16),
        answer=TextAnswer(text="The quick brown fox"),
        finish_reason="length",
        usage=Usage(prompt_tokens=32, completion_tokens=16, total_tokens=48),
        content_chunks=16,
        streamed_tokens=16,
        streamed_token_source=TokenSource.stream,
        terminal_seen=True,
        timing=ResponseTiming(send_ns=0, end_ns=1),
    )
    steps = screened_steps(default_chain(Endpoint.chat))
    assert all(screen is not None and screen(response) for _, _, screen in steps)


@pytest.mark.parametrize("name", list(CHAINS))
@settings(max_examples=300, deadline=None)
@given(response=responses())
def test_judge_gives_the_same_verdict_with_screens_honoured_or_ignored(
    name: str, response: GenerationResponse
) -> None:
    validate = CHAINS[name]
    honoured = judge(Success(response), validate)
    ignored = judge(Success(response), _unscreened(validate))
    assert honoured == ignored


def _odd_chunks_rejecter() -> Validator[GenerationResponse]:
    """A fresh validator each time, so a screen given to one is not seen by the next."""

    def rejects_odd(response: GenerationResponse) -> Result[GenerationResponse, UnusableResponse]:
        if response.content_chunks % 2:
            problem = UnusableResponse(code=DiagnosticCode.empty_response, message="odd")
            return Failure(problem)
        return Success(response)

    return rejects_odd


def _raising(response: GenerationResponse) -> bool:
    raise RuntimeError("a broken screen")


@pytest.mark.parametrize("chunks", [1, 2])
def test_a_screen_that_raises_leaves_the_verdict_to_its_validator(chunks: int) -> None:
    response = GenerationResponse(
        request_id="r-raise",
        endpoint=Endpoint.chat,
        streamed=False,
        answer=TextAnswer(text="hi"),
        content_chunks=chunks,
        timing=ResponseTiming(send_ns=0, end_ns=1),
    )
    plain = judge(Success(response), _odd_chunks_rejecter())
    guarded = screened(_raising)(_odd_chunks_rejecter())
    assert judge(Success(response), guarded) == plain
    assert plain.status == ("errored" if chunks % 2 else "completed")
