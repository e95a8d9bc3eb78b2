"""`chain`: order, first failure wins, nesting, and the empty chain."""

from __future__ import annotations

from collections.abc import Callable

from returns.result import Failure, Result, Success

from assay.core import DiagnosticCode, UnusableResponse
from assay.validators import Chain, Validator, chain


def _recording(name: str, calls: list[str], fail: bool = False) -> Validator[str]:
    def check(response: str) -> Result[str, UnusableResponse]:
        calls.append(name)
        if fail:
            return Failure(
                UnusableResponse(code=DiagnosticCode.empty_response, message=f"{name} rejected")
            )
        return Success(response)

    check.__name__ = name
    return check


def test_chain_runs_validators_in_order_and_returns_the_response() -> None:
    calls: list[str] = []
    validate = chain(_recording("a", calls), _recording("b", calls), _recording("c", calls))
    assert validate("payload") == Success("payload")
    assert calls == ["a", "b", "c"]


def test_first_failure_wins_and_later_validators_do_not_run() -> None:
    calls: list[str] = []
    validate = chain(
        _recording("a", calls),
        _recording("b", calls, fail=True),
        _recording("c", calls, fail=True),
    )
    result = validate("payload")
    assert isinstance(result, Failure)
    assert result.failure().message == "b rejected"
    assert calls == ["a", "b"]


def test_nested_chains_flatten_into_one_chain_with_the_same_order() -> None:
    calls: list[str] = []
    inner = chain(_recording("a", calls), _recording("b", calls))
    outer = chain(inner, _recording("c", calls), chain(_recording("d", calls)))
    assert isinstance(outer, Chain)
    assert len(outer.steps) == 4
    assert outer("x") == Success("x")
    assert calls == ["a", "b", "c", "d"]
    assert repr(outer) == "chain(a, b, c, d)"


def test_empty_chain_accepts_everything() -> None:
    empty: Callable[[int], Result[int, UnusableResponse]] = chain()
    assert empty(7) == Success(7)
