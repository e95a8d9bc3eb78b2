"""usage_mismatch (lenient, two-sided, continuous usage) and max_tokens_not_honoured."""

from __future__ import annotations

import pytest
from returns.result import Success

from assay.core import (
    DiagnosticCode,
    Endpoint,
    GenerationResponse,
    RequestEcho,
    ResponseTiming,
    TokenSource,
    Usage,
)
from assay.errors import ConfigError
from assay.validators import max_tokens_not_honoured, usage_mismatch


def _stream(reported: int | None, chunks: int, **fields: object) -> GenerationResponse:
    """A streamed completions answer with `chunks` token chunks and the given usage."""
    base: dict[str, object] = {
        "request_id": "req-3",
        "endpoint": Endpoint.completions,
        "streamed": True,
        "text": " word" * chunks,
        "finish_reason": "length",
        "usage": None if reported is None else Usage(prompt_tokens=64, completion_tokens=reported),
        "content_chunks": chunks,
        "streamed_tokens": chunks,
        "streamed_token_source": TokenSource.stream,
        "terminal_seen": True,
        "timing": ResponseTiming(send_ns=0, end_ns=1_000_000),
    }
    return GenerationResponse.model_validate({**base, **fields})


lenient = usage_mismatch()
two_sided = usage_mismatch(two_sided=True)


def test_matching_counts_pass_both_modes() -> None:
    response = _stream(reported=128, chunks=128)
    assert lenient(response) == Success(response)
    assert two_sided(response) == Success(response)


def test_no_usage_from_the_server_is_silent() -> None:
    # llama.cpp sends no usage chunk in streams even when asked.
    response = _stream(reported=None, chunks=40)
    assert lenient(response) == Success(response)
    assert two_sided(response) == Success(response)


def test_stream_carrying_more_tokens_than_reported_is_usage_mismatch() -> None:
    response = _stream(reported=100, chunks=110)
    diagnostic = lenient(response).failure()
    assert diagnostic.code is DiagnosticCode.usage_mismatch
    assert diagnostic.message == (
        "server usage reports 100 completion tokens but the stream carried 110 (10 more), "
        "beyond the tolerance of 2 tokens"
    )
    assert diagnostic.evidence.partial is response


def test_excess_within_tolerance_passes() -> None:
    # 2 % of 100 is 2 tokens.
    response = _stream(reported=100, chunks=102)
    assert lenient(response) == Success(response)
    # The 1-token floor applies to short answers.
    short = _stream(reported=5, chunks=6)
    assert lenient(short) == Success(short)


def test_fewer_chunks_than_reported_passes_both_modes() -> None:
    # Issue 8: a chunk may carry several tokens (a stream interval; vLLM's /v1/responses sent
    # 14 text events for 16 tokens; word-streaming servers). A chunk count proves only a lower
    # bound, so even the two-sided check never fails a stream for carrying fewer chunks.
    response = _stream(reported=128, chunks=32)
    assert lenient(response) == Success(response)
    assert two_sided(response) == Success(response)
    merged = _stream(reported=16, chunks=14, endpoint=Endpoint.responses)
    assert two_sided(merged) == Success(merged)


def test_two_sided_checks_fewer_against_a_running_usage() -> None:
    # With continuous usage the stream proves its count: fewer than reported is a mismatch.
    source = {"streamed_token_source": TokenSource.continuous_usage}
    fewer = _stream(reported=16, chunks=14, **source)
    assert "carried 14 (2 fewer)" in two_sided(fewer).failure().message


def test_tokens_streamed_against_zero_usage_is_usage_mismatch() -> None:
    response = _stream(reported=0, chunks=1)
    diagnostic = lenient(response).failure()
    assert diagnostic.code is DiagnosticCode.usage_mismatch
    assert "usage says none were generated" in diagnostic.message


def test_continuous_usage_must_agree_exactly() -> None:
    source = {"streamed_token_source": TokenSource.continuous_usage}
    agreeing = _stream(reported=64, chunks=64, **source)
    assert lenient(agreeing) == Success(agreeing)
    off_by_one = _stream(reported=64, chunks=63, **source)
    diagnostic = lenient(off_by_one).failure()
    assert "must match the final usage exactly" in diagnostic.message


def test_non_streamed_answer_has_nothing_to_compare() -> None:
    response = _stream(
        reported=50, chunks=0, streamed=False, streamed_token_source=TokenSource.none
    )
    assert two_sided(response) == Success(response)


def test_custom_tolerance_is_honoured() -> None:
    response = _stream(reported=100, chunks=110)
    assert usage_mismatch(tolerance_ratio=0.1)(response) == Success(response)
    assert usage_mismatch(tolerance_tokens=20)(response) == Success(response)


def test_negative_tolerance_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="must not be negative"):
        usage_mismatch(tolerance_tokens=-1)


def _ignore_eos(
    reported: int, wanted: int | None = 128, ignore_eos: bool = True
) -> GenerationResponse:
    return _stream(
        reported=reported,
        chunks=reported,
        echo=RequestEcho(max_output_tokens=wanted, ignore_eos=ignore_eos),
    )


def test_ignore_eos_answer_of_exact_length_passes() -> None:
    response = _ignore_eos(reported=128)
    assert max_tokens_not_honoured(response) == Success(response)


def test_ignore_eos_answer_shorter_than_asked_is_max_tokens_not_honoured() -> None:
    diagnostic = max_tokens_not_honoured(_ignore_eos(reported=97)).failure()
    assert diagnostic.code is DiagnosticCode.max_tokens_not_honoured
    assert diagnostic.message == (
        "ignore_eos asked for exactly 128 output tokens but the server returned 97 "
        "(31 fewer; count from usage, finish_reason='length')"
    )


def test_without_ignore_eos_a_short_answer_is_fine() -> None:
    response = _ignore_eos(reported=97, ignore_eos=False)
    assert max_tokens_not_honoured(response) == Success(response)


def test_ignore_eos_without_max_tokens_is_not_checked() -> None:
    response = _ignore_eos(reported=97, wanted=None)
    assert max_tokens_not_honoured(response) == Success(response)
