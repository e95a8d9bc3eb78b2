"""A stream that carried its finish_reason but ended without `[DONE]`: `truncated_stream` by
default (the server did not finish the response, and the usage chunk that follows the finish
chunk can be lost with it), let through by `--allow-missing-done` for servers that never send
`[DONE]`, in `run` and in `revalidate` alike."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.cli.cli_harness import (
    assert_every_request_accounted,
    read_record_lines,
    run_assay,
    run_fast,
)

from assay.backend import wire_request_id
from assay.mock import choose_fault

SEED = 11
RATES = {"missing_done": 0.3}
REQUESTS = 60


def injected(run_dir: Path) -> set[str]:
    """The request ids the mock answered without `[DONE]`: its own choice, redone here."""
    ids = {line["id"] for line in read_record_lines(run_dir)}
    return {i for i in ids if choose_fault(SEED, RATES, wire_request_id(i)) == "missing_done"}


def errored(run_dir: Path) -> dict[str, str]:
    return {
        line["id"]: line["code"]
        for line in read_record_lines(run_dir)
        if line["status"] == "errored"
    }


def run_missing_done(run_dir: Path, *extra: str) -> None:
    run_fast(
        run_dir, "--mock-fault", "missing_done=0.3", "--seed", str(SEED),
        "--max-requests", str(REQUESTS), "--processes", "1", "--max-error-rate", "1", *extra,
    )  # fmt: skip
    assert_every_request_accounted(run_dir)


@pytest.fixture(scope="module")
def default_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run_dir = tmp_path_factory.mktemp("missing-done")
    run_missing_done(run_dir)
    return run_dir


def test_stream_without_done_after_its_finish_reason_is_truncated_stream(
    default_run: Path,
) -> None:
    cut = injected(default_run)
    assert 0 < len(cut) < REQUESTS
    assert errored(default_run) == dict.fromkeys(cut, "truncated_stream")


def test_allow_missing_done_counts_those_streams_as_completed(tmp_path: Path) -> None:
    run_missing_done(tmp_path, "--allow-missing-done")
    assert injected(tmp_path)
    assert errored(tmp_path) == {}


def test_revalidate_with_allow_missing_done_lets_them_through(default_run: Path) -> None:
    result = run_assay("revalidate", default_run, "--allow-missing-done")
    assert result.exit_code == 0, result.stdout + result.stderr
    assert errored(default_run / "revalidated") == {}
    assert f"{len(injected(default_run))} errored -> completed" in result.stdout
