"""The faults the mock injects, the diagnostic code each must produce, and how one is chosen.

A fault is asked for per request with a header (`X-Assay-Fault: inband_error; after=3`) or per
run with rates. The rate choice is a pure function of the seed and the request's key, so the set
of injected requests does not depend on worker processes or arrival order.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from assay.core.diagnostics import DiagnosticCode
from assay.errors import ConfigError

FAULT_HEADER = "X-Assay-Fault"
REQUEST_ID_HEADER = "X-Request-Id"
TRACEPARENT_HEADER = "traceparent"
DEFAULT_STALL_SECONDS = 3600.0
# Faults that cut a stream after `after` tokens: the answer never finishes.
CUT_FAULTS = frozenset(
    {"inband_error", "sse_error_event", "truncated_stream", "drop", "stall", "invalid_json"}
)


@dataclass(frozen=True, slots=True)
class FaultInfo:
    """The code a client must report for a fault, and what the mock does on the wire."""

    code: DiagnosticCode
    description: str


_C = DiagnosticCode
FAULTS: Mapping[str, FaultInfo] = MappingProxyType(
    {
        "empty_stream": FaultInfo(
            _C.empty_response, "200 stream of only `data: [DONE]`; non-streamed: empty content"
        ),
        "no_body": FaultInfo(_C.no_terminal_response, "200 with an empty body"),
        "choices_empty": FaultInfo(
            _C.empty_response, 'only {"choices": [], "usage": {}} (streamed: that chunk, [DONE])'
        ),
        "inband_error": FaultInfo(_C.inband_error, 'data: {"error": {...}} after `after` tokens'),
        "sse_error_event": FaultInfo(
            _C.sse_error_event, "an `event: error` frame after `after` tokens"
        ),
        "truncated_stream": FaultInfo(
            _C.truncated_stream, "clean end after `after` tokens: no [DONE], no finish_reason"
        ),
        "missing_finish_reason": FaultInfo(
            _C.missing_finish_reason, "[DONE] sent, but no finish_reason ever (strict for bodies)"
        ),
        "drop": FaultInfo(_C.stream_interrupted, "connection aborted after `after` tokens"),
        "stall": FaultInfo(
            _C.timeout_idle, "stop sending after `after` tokens for `seconds` (default 3600)"
        ),
        "http_429": FaultInfo(_C.http_status, "429 with an OpenAI-style error body"),
        "http_500": FaultInfo(_C.http_status, "500 with an OpenAI-style error body"),
        "http_503": FaultInfo(_C.http_status, "503 with an OpenAI-style error body"),
        "html_200": FaultInfo(_C.bad_content_type, "200 text/html proxy page"),
        "invalid_json": FaultInfo(_C.invalid_json, "a data line or body that is not JSON"),
        "unexpected_shape": FaultInfo(_C.unexpected_shape, "valid JSON without `choices`"),
        "wrong_usage": FaultInfo(
            _C.usage_mismatch, "stream usage reports half the completion tokens streamed"
        ),
        "short_output": FaultInfo(
            _C.max_tokens_not_honoured, "ignore_eos asked for N tokens, N//2 returned"
        ),
        "empty_embedding": FaultInfo(_C.empty_embedding, "embeddings answer with `data: []`"),
        "invalid_tool_call": FaultInfo(
            _C.invalid_tool_call, "a tool call whose arguments are not JSON (chat)"
        ),
        "invalid_json_output": FaultInfo(
            _C.invalid_json_output, "JSON mode requested, prose returned"
        ),
        "missing_done": FaultInfo(
            _C.truncated_stream,
            "the whole answer with finish_reason (and usage), then a clean end with no [DONE]",
        ),
        "no_results": FaultInfo(_C.no_results, "rerank/score answer with an empty result list"),
        "result_count_mismatch": FaultInfo(
            _C.result_count_mismatch, "rerank/score answer missing its last result"
        ),
        "index_out_of_range": FaultInfo(
            _C.invalid_result_index, "rerank/score: the last result names a document not sent"
        ),
        "repeated_index": FaultInfo(
            _C.invalid_result_index,
            "rerank/score: the last result names the first one's document again",
        ),
        "non_finite_score": FaultInfo(
            _C.non_finite_score, "rerank/score: the last result's score is NaN"
        ),
    }
)
"""Fault name -> the diagnostic code the client must report, and a one-line description."""


@dataclass(frozen=True, slots=True)
class FaultSpec:
    """One fault to inject into one request."""

    name: str
    after: int = 2
    seconds: float = DEFAULT_STALL_SECONDS


def parse_fault_header(value: str, default_after: int = 2) -> FaultSpec:
    """Read `name; after=3; seconds=0.5` (spaces and case forgiven); misuse raises `ConfigError`.

    >>> parse_fault_header(" Inband_Error ; after = 3 ")
    FaultSpec(name='inband_error', after=3, seconds=3600.0)
    >>> parse_fault_header("stall; seconds=0.5").seconds
    0.5
    """
    name, _, rest = value.partition(";")
    name = name.strip().lower().replace("-", "_")
    if name not in FAULTS:
        raise ConfigError(f"unknown fault {name!r} in {FAULT_HEADER}; known: {', '.join(FAULTS)}")
    after, seconds = default_after, DEFAULT_STALL_SECONDS
    for param in filter(None, (p.strip() for p in rest.replace(",", ";").split(";"))):
        key, sep, raw = param.partition("=")
        key, raw = key.strip().lower(), raw.strip()
        try:
            if not sep:
                raise ValueError("no value")
            if key == "after":
                after = int(raw)
                if after < 0:
                    raise ValueError("negative")
            elif key == "seconds":
                seconds = float(raw)
                if not seconds >= 0:
                    raise ValueError("negative")
            else:
                raise ConfigError(
                    f"unknown parameter {key!r} in {FAULT_HEADER} {value!r}; known: after, seconds"
                )
        except ValueError:
            raise ConfigError(
                f"bad value for {key!r} in {FAULT_HEADER} {value!r}: expected a number >= 0"
            ) from None
    return FaultSpec(name=name, after=after, seconds=seconds)


def choose_fault(seed: int, rates: Mapping[str, float], request_key: str) -> str | None:
    """The fault for one request, or None: a pure function of the seed, rates and request key.

    A keyed hash maps the request to a point of [0, 1); the rates, in `FAULTS` order, share
    that interval. Over many keys each fault is chosen at its rate.

    >>> choose_fault(0, {}, "r1") is None
    True
    >>> choose_fault(7, {"http_500": 1.0}, "r1")
    'http_500'
    >>> choose_fault(7, {"drop": 0.5}, "r2") == choose_fault(7, {"drop": 0.5}, "r2")
    True
    """
    if not rates:
        return None
    digest = hashlib.blake2b(f"{seed}\x00{request_key}".encode(), digest_size=8).digest()
    point = int.from_bytes(digest, "big") / 2**64
    edge = 0.0
    for name in FAULTS:  # the table's order, never the caller's dict order
        edge += rates.get(name, 0.0)
        if point < edge:
            return name
    return None


RANKING_FAULTS = frozenset(
    {
        "no_results",
        "result_count_mismatch",
        "index_out_of_range",
        "repeated_index",
        "non_finite_score",
    }
)


__all__ = [
    "CUT_FAULTS",
    "DEFAULT_STALL_SECONDS",
    "FAULTS",
    "FAULT_HEADER",
    "RANKING_FAULTS",
    "REQUEST_ID_HEADER",
    "TRACEPARENT_HEADER",
    "FaultInfo",
    "FaultSpec",
    "choose_fault",
    "parse_fault_header",
]
