"""Every `assay mock` flag whose value is out of range is refused with one `error:` line that
names the flag as typed, as `assay run` names its own (`--ttft-ms: ...`, never `value: ...`
or a field's name), and no server starts."""

from __future__ import annotations

import pytest
from tests.cli.cli_harness import run_assay
from tests.cli.test_cli_bad_input import assert_one_error_line

from assay.cli.mock_command import validated
from assay.errors import ConfigError
from assay.mock import MockConfig

# flags -> the start of the one error line, which names the flag given.
CASES: dict[str, tuple[tuple[str, ...], str]] = {
    "ttft_negative": (("--ttft-ms", "-5"), "error: --ttft-ms: "),
    "ttft_infinite": (("--ttft-ms", "inf"), "error: --ttft-ms: "),
    # The same ceiling as `assay run --mock-ttft-ms` (30 days), not a sleep never woken from.
    "ttft_past_the_run_ceiling": (("--ttft-ms", "1e12"), "error: --ttft-ms: "),
    "itl_not_a_number": (("--itl-ms", "nan"), "error: --itl-ms: "),
    "output_tokens_negative": (("--output-tokens", "-3"), "error: --output-tokens: "),
    # Was named by the config's field, `--fault-after-tokens`, a flag that does not exist.
    "fault_after_negative": (("--fault-after", "-1"), "error: --fault-after: "),
    "metrics_scale_negative": (("--metrics-scale", "-1"), "error: --metrics-scale: "),
    # Was accepted: every counter of /metrics then read inf.
    "metrics_scale_infinite": (("--metrics-scale", "inf"), "error: --metrics-scale: "),
    "max_model_len_zero": (("--max-model-len", "0"), "error: --max-model-len: "),
    "gpu_watts_negative": (("--gpu-watts", "-5"), "error: --gpu-watts: "),
    # Was `tokens-per-s: ...`, without the dashes of a flag.
    "tokens_per_s_infinite": (("--tokens-per-s", "inf"), "error: --tokens-per-s: "),
    "slots_zero": (("--slots", "0"), "error: --slots: "),
    "fault_past_zero": (("--fault-past", "0"), "error: --fault-past: "),
    "load_fault_unknown": (("--fault-past", "2", "--load-fault", "x"), "error: --load-fault: "),
    "load_fault_without_its_load": (
        ("--load-fault", "cut"),
        "error: --load-fault needs --fault-past",
    ),
    "fault_rate_above_one": (("--fault", "empty_stream=2"), "error: --fault: "),
    "fault_rates_above_one_in_all": (
        ("--fault", "empty_stream=0.7", "--fault", "drop=0.7"),
        "error: --fault: ",
    ),
    "fault_unknown": (("--fault", "nope=0.1"), "error: --fault: "),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_mock_flag_out_of_range_names_the_flag(case: str) -> None:
    flags, start = CASES[case]
    result = run_assay("mock", "--port", "0", *flags, timeout_s=30)
    line = assert_one_error_line(result, start)
    assert line.startswith(start), line
    assert "value:" not in line, line
    assert "serving" not in result.stdout


def test_mock_ranges_are_the_embedded_mocks_of_assay_run() -> None:
    # The limits come from the run's own `Mock` section: one ceiling for both commands.
    run = run_assay("run", "--max-requests", "1", "--mock-ttft-ms", "1e12", timeout_s=30)
    mock = run_assay("mock", "--port", "0", "--ttft-ms", "1e12", timeout_s=30)
    run_line = assert_one_error_line(run)
    mock_line = assert_one_error_line(mock)
    assert run_line.replace("--mock-ttft-ms", "--ttft-ms") == mock_line


# `assay run --mock-fault ...` -> the start of its one error line: the flag, never "embedded mock".
RUN_FAULT_CASES: dict[str, tuple[str, str]] = {
    "rate_above_one": ("empty_stream=2", "error: --mock-fault: fault rates must be within [0, 1]"),
    "rate_not_finite": ("empty_stream=nan", "error: --mock-fault: fault rates must be within"),
    "unknown": ("nope=0.1", "error: --mock-fault: unknown fault(s) ['nope']"),
}


@pytest.mark.parametrize("case", sorted(RUN_FAULT_CASES))
def test_run_mock_fault_out_of_range_names_the_flag(case: str) -> None:
    value, start = RUN_FAULT_CASES[case]
    result = run_assay("run", "--max-requests", "1", "--mock-fault", value, timeout_s=30)
    line = assert_one_error_line(result, start)
    assert line.startswith(start), line


def test_validated_names_a_problem_by_the_flag_given_for_its_key() -> None:
    with pytest.raises(ConfigError) as raised:
        validated(MockConfig, {"fault_after_tokens": -1}, {"fault_after_tokens": "--fault-after"})
    assert str(raised.value) == "--fault-after: Input should be greater than or equal to 0"
