"""A large request field is echoed by size and digest, and a huge one refused (issue 21.8): a
100 MB `--extra-body` was copied whole into report.json and report.html."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from tests.cli.cli_harness import read_report, run_fast
from tests.cli.test_cli_bad_input import assert_one_error_line

from assay.spec.limits import ECHOED_FIELD_BYTES, MAX_EXTRA_BODY_BYTES


def test_a_large_extra_body_value_is_echoed_by_size_and_digest(tmp_path: Path) -> None:
    blob = "z" * (8 * ECHOED_FIELD_BYTES)
    run_dir = tmp_path / "run"
    result = run_fast(
        run_dir, "--max-requests", "2", "--processes", "1",
        "--extra-body", json.dumps({"top_k": 3, "blob": blob}),
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    echoed = read_report(run_dir).run_config["extra_body"]
    digest = hashlib.sha256(json.dumps(blob).encode()).hexdigest()
    assert echoed == {"top_k": 3, "blob": f"({len(blob) + 2:,} bytes of JSON, sha256 {digest})"}
    for name in ("report.json", "report.html"):
        assert blob not in (run_dir / name).read_text(encoding="utf-8"), name


def test_an_extra_body_above_the_limit_is_one_error_line(tmp_path: Path) -> None:
    config = tmp_path / "run.json"
    config.write_text(
        json.dumps({"extra_body": {"blob": "z" * (MAX_EXTRA_BODY_BYTES + 1)}}), encoding="utf-8"
    )
    result = run_fast(tmp_path / "run", "--max-requests", "1", "--config", config)
    assert_one_error_line(result, "extra", "16,777,216")
