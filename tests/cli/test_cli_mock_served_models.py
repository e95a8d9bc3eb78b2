"""`assay mock --served-model`: the models served beside --model-name, each with its latency,
and one `error:` line for a value it cannot read (issue 39, traffic mixes)."""

from __future__ import annotations

import json
import urllib.request

import pytest
from tests.cli.cli_harness import assay_mock, run_assay
from tests.cli.test_cli_bad_input import assert_one_error_line
from tests.cli.test_cli_mock_startup import first_lines


def test_served_models_are_listed_at_v1_models() -> None:
    with (
        assay_mock("--served-model", "lora-a=40/8", "--served-model", "lora-b") as url,
        urllib.request.urlopen(f"{url}/v1/models", timeout=10) as answer,
    ):
        listed = json.loads(answer.read())
    assert [model["id"] for model in listed["data"]] == ["assay-mock", "lora-a", "lora-b"]


def test_the_mock_says_at_start_up_what_it_also_serves() -> None:
    lines = first_lines(
        "--ttft-ms", "20", "--itl-ms", "4", "--served-model", "a=100/10",
        "--served-model", "b", "--served-model", "c", count=4,
    )  # fmt: skip
    # b is the first bare name (the mock's own latency), c the second (TTFT x 1.5, ITL x 1.25).
    assert lines[3] == (
        "also serves: a (TTFT 100 ms, ITL 10 ms), b (TTFT 20 ms, ITL 4 ms), "
        "c (TTFT 30 ms, ITL 5 ms)"
    )


@pytest.mark.parametrize(
    ("values", "words"),
    [
        (("",), ("--served-model", "NAME=TTFT_MS/ITL_MS")),
        (("=40/8",), ("--served-model", "NAME=TTFT_MS/ITL_MS")),
        (("a=40",), ("--served-model 'a=40'", "two numbers")),
        (("a=x/8",), ("--served-model 'a=x/8'", "two numbers")),
        (("a=-1/8",), ("--served-model 'a=-1/8'", "two numbers")),
        (("a=nan/8",), ("--served-model 'a=nan/8'", "two numbers")),
        (("a", "a=40/8"), ("--served-model 'a'", "more than once")),
    ],
)
def test_a_served_model_it_cannot_read_is_one_error_line(
    values: tuple[str, ...], words: tuple[str, ...]
) -> None:
    flags = [part for value in values for part in ("--served-model", value)]
    result = run_assay("mock", "--port", "0", *flags, timeout_s=30)
    assert_one_error_line(result, *words)
    assert "serving" not in result.stdout
