"""load_validator and resolve_validator: built-in names, import paths, and clear refusals."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
from returns.result import Success

from assay.core import Endpoint, GenerationResponse, ResponseTiming, TextAnswer
from assay.errors import ValidatorLoadError
from assay.validators import (
    BUILTIN_VALIDATORS,
    empty_response,
    load_validator,
    resolve_validator,
)

USER_MODULE = """
from returns.result import Failure, Success

from assay.core import DiagnosticCode, Evidence, UnusableResponse


def no_refusals(response):
    if response.text.startswith("I'm sorry"):
        return Failure(UnusableResponse(code=DiagnosticCode.empty_response,
                                        message="refusal", evidence=Evidence(partial=response)))
    return Success(response)


def with_option(response, strictness=1):
    return Success(response)


def two_args(response, other):
    return Success(response)


def keyword_required(response, *, mode):
    return Success(response)


class Holder:
    @staticmethod
    def check(response):
        return Success(response)


THRESHOLD = 3
"""


@pytest.fixture
def user_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A real module on sys.path, as a user's own validators would be."""
    (tmp_path / "team_checks.py").write_text(textwrap.dedent(USER_MODULE))
    (tmp_path / "broken_checks.py").write_text("import not_installed_anywhere_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return "team_checks"


def _answer(text: str) -> GenerationResponse:
    return GenerationResponse(
        request_id="r1",
        endpoint=Endpoint.chat,
        streamed=False,
        answer=TextAnswer(text=text),
        finish_reason="stop",
        timing=ResponseTiming(send_ns=0, end_ns=1),
    )


def test_user_validator_loads_and_runs(user_module: str) -> None:
    validate = load_validator(f"{user_module}:no_refusals")
    ok = _answer("Paris.")
    assert validate(ok) == Success(ok)
    assert validate(_answer("I'm sorry, no.")).failure().message == "refusal"


def test_optional_extra_parameters_and_dotted_attributes_are_accepted(user_module: str) -> None:
    assert callable(load_validator(f"{user_module}:with_option"))
    assert callable(load_validator(f"{user_module}:Holder.check"))


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("team_checks", "is not a validator path: expected 'package.module:name'"),
        ("team_checks:", "is not a validator path"),
        ("no_such_package_xyz.checks:run", "no module named 'no_such_package_xyz'"),
        ("broken_checks:run", "importing 'broken_checks' failed"),
        ("team_checks:missing", "'team_checks' has no attribute 'missing'"),
        ("team_checks:THRESHOLD", "is not callable (it is of type int)"),
        ("team_checks:two_args", "must take exactly one required positional parameter"),
        ("team_checks:keyword_required", "must take exactly one required positional parameter"),
    ],
)
def test_bad_validator_paths_raise_validator_load_error(
    user_module: str, spec: str, message: str
) -> None:
    with pytest.raises(ValidatorLoadError, match=re.escape(message)):
        load_validator(spec)


def test_builtin_names_resolve_before_import_paths() -> None:
    assert resolve_validator("empty_response") is empty_response
    for builtin in BUILTIN_VALIDATORS:
        assert resolve_validator(builtin.name) is builtin.validator


def test_resolve_falls_back_to_import_paths(user_module: str) -> None:
    validate = resolve_validator(f"{user_module}:no_refusals")
    assert validate.__name__ == "no_refusals"


def test_unknown_bare_name_lists_the_builtins() -> None:
    with pytest.raises(ValidatorLoadError, match="unknown validator 'empty_respnse'") as info:
        resolve_validator("empty_respnse")
    assert "truncated_stream" in str(info.value)
