"""`assay mock --served-model` given what a hostile or careless user types (issue 39): each is
one `error:` line and exit 2, never a traceback nor a mock that never answers; a name with
control characters is served as given and printed as text."""

from __future__ import annotations

import json
import urllib.request

import pytest
from tests.cli.cli_harness import assay_mock, run_assay
from tests.cli.test_cli_bad_input import assert_one_error_line
from tests.cli.test_cli_mock_startup import first_lines

from assay.cli.mock_command import MOST_SERVED_MODELS


@pytest.mark.parametrize(
    ("values", "words"),
    [
        # 1e300 ms was taken: a request to the model then waited for ever.
        (("a=1e300/8",), ("--served-model 'a=1e300/8'", "from 0 to 3600000")),
        (("a=40/inf",), ("--served-model 'a=40/inf'", "from 0 to 3600000")),
        (("a=40/-0.5",), ("--served-model 'a=40/-0.5'", "from 0 to 3600000")),
        (("a=40/8/2",), ("--served-model 'a=40/8/2'", "two numbers")),
        (("a=b=40/8",), ("--served-model 'a=b=40/8'", "two numbers")),
        (("a=",), ("--served-model 'a='", "two numbers")),
        # The --model-name again: which of its two latencies would it answer with?
        (("assay-mock=5/1",), ("--served-model 'assay-mock'", "--model-name")),
        (("org/m", " org/m "), ("--served-model 'org/m'", "more than once")),
    ],
)
def test_a_served_model_it_cannot_take_is_one_error_line(
    values: tuple[str, ...], words: tuple[str, ...]
) -> None:
    flags = [part for value in values for part in ("--served-model", value)]
    result = run_assay("mock", "--port", "0", *flags, timeout_s=30)
    assert_one_error_line(result, *words)


def test_more_models_than_a_server_lists_is_one_error_line() -> None:
    flags = [f"--served-model=m{i}" for i in range(MOST_SERVED_MODELS + 1)]
    result = run_assay("mock", "--port", "0", *flags, timeout_s=60)
    assert_one_error_line(result, "--served-model", f"at most {MOST_SERVED_MODELS} models")


def test_names_with_slashes_and_control_characters_are_served_as_given() -> None:
    odd = "team/\x1b[31mlora\u202e"
    with (
        assay_mock("--served-model", "meta-llama/Llama-3.1-8B=40/8", "--served-model", odd) as url,
        urllib.request.urlopen(f"{url}/v1/models", timeout=10) as answer,
    ):
        listed = [model["id"] for model in json.loads(answer.read())["data"]]
    assert listed == ["assay-mock", "meta-llama/Llama-3.1-8B", odd]
    line = first_lines("--served-model", odd, count=4)[3]
    assert line == "also serves: team/\\x1b[31mlora\\u202e (TTFT 0 ms, ITL 0 ms)"
