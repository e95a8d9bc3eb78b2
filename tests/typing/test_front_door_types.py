"""The names `assay` imports lazily keep their full types for mypy, and a name it does not export
is a type error, not an `object`."""

from __future__ import annotations

from typing import assert_type

from returns.result import Result

import assay
from assay import Completed, Endpoint, Errored, GenerationResponse, UnusableResponse, judge_bytes
from tests.typing.test_exhaustive_match import _mypy

BODY = b'{"choices": [{"message": {"content": "Hi"}, "finish_reason": "stop"}]}'


def test_judge_bytes_is_typed_through_the_lazy_front_door() -> None:
    result = judge_bytes(Endpoint.chat, BODY, "application/json")
    assert_type(result, Result[GenerationResponse, UnusableResponse])
    assert result.unwrap().text == "Hi"


def test_judge_is_typed_through_the_lazy_front_door() -> None:
    verdict = assay.judge(judge_bytes(Endpoint.chat, BODY, "application/json"), assay.chain())
    assert_type(verdict, Completed[GenerationResponse] | Errored)
    assert verdict.status == "completed"


def test_misspelt_top_level_name_is_a_type_error() -> None:
    run = _mypy("misspelt_top_level_name.py")
    assert run.returncode == 1, run.stdout + run.stderr
    assert 'Module "assay" has no attribute "judgebytes"' in run.stdout
    assert "Found 1 error in 1 file" in run.stdout
