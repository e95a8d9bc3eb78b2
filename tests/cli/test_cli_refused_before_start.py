"""A hostile or absurd dataset or flag is refused before `assay run` starts any process (issue 37:
"refused in under a second"): no embedded mock, no load process, so the refusal costs only the
check. Observed, not timed: a `sitecustomize` on the run's PYTHONPATH logs every child process
the run starts (`child_watch`), and a refused run starts none."""

from __future__ import annotations

import os
import random
from pathlib import Path

import orjson
import pytest
from tests.cli.child_watch import children, watch
from tests.cli.cli_harness import FAST, run_assay
from tests.cli.test_cli_bad_input import assert_one_error_line
from tests.cli.wire import bodies_by_id

from assay.data.media import ImageSize, synthetic_image


def _png() -> bytes:
    return synthetic_image(ImageSize(width=8, height=8), "png", random.Random(3))


def _dataset(tmp_path: Path, kind: str) -> tuple[Path, str]:
    """A data folder whose one row names an image of the attack `kind`, and the words its
    refusal holds."""
    (tmp_path / "private").mkdir()
    (tmp_path / "private" / "x.png").write_bytes(_png())
    folder = tmp_path / "data"
    folder.mkdir()
    match kind:
        case "parent":
            image, words = "../private/x.png", "outside the folders"
        case "absolute":
            image, words = str(tmp_path / "private" / "x.png"), "outside the folders"
        case "symlink_out":
            (folder / "link.png").symlink_to(tmp_path / "private" / "x.png")
            image, words = "link.png", "outside the folders"
        case "device":
            image, words = "/dev/zero", "outside the folders"
        case "fifo":
            os.mkfifo(folder / "pipe.png")
            image, words = "pipe.png", "not a regular file"
        case _:
            raise AssertionError(kind)
    data = folder / "rows.jsonl"
    data.write_bytes(orjson.dumps({"prompt": "hi", "images": [image]}))
    return data, words


@pytest.mark.parametrize("kind", ["parent", "absolute", "symlink_out", "device", "fifo"])
def test_a_hostile_dataset_is_refused_before_any_process_starts(tmp_path: Path, kind: str) -> None:
    hook, log = watch(tmp_path)
    data, words = _dataset(tmp_path, kind)
    wire = tmp_path / "wire.jsonl"
    result = run_assay(
        "run", *FAST[: FAST.index("--prompt-tokens")], "--output-dir", tmp_path / "run",
        "--data", data, "--processes", "2", "--mock-record-requests", wire, python_path=hook,
    )  # fmt: skip
    assert_one_error_line(result, "rows.jsonl, line 1", "images[0]", words)
    assert "embedded mock" not in result.stdout
    # No embedded mock, no load process: the run started no child at all.
    assert children(log) == []
    assert not wire.exists()
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (("--images", "1000000"), ("1,000,000 images",)),
        (
            ("--endpoint", "transcriptions", "--audio-seconds", "3600"),
            ("3600 s of audio", "600 s", "19,200,000 bytes"),
        ),
        (("--audio-seconds", "1e308"), ("1e+308 s of audio", "600 s")),
        (("--endpoint", "rerank", "--documents", "100000"), ("100,000 documents",)),
        (
            ("--endpoint", "rerank", "--documents", "8", "--document-tokens", "2097152"),
            ("8 documents",),
        ),
    ],
)
def test_an_absurd_request_size_is_refused_before_any_process_starts(
    tmp_path: Path, flags: tuple[str, ...], words: tuple[str, ...]
) -> None:
    hook, log = watch(tmp_path)
    result = run_assay(
        "run", "--output-dir", tmp_path / "run", "--processes", "2", *flags,
        python_path=hook,
    )  # fmt: skip
    assert_one_error_line(result, "docs/security.md", *words)
    assert children(log) == []


def test_the_watch_sees_the_children_of_a_run_that_starts(tmp_path: Path) -> None:
    """The control: the same watch on a valid dataset logs the mock and the load process, and
    the run sends from the file it read ahead, with the model the mock serves."""
    hook, log = watch(tmp_path)
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "x.png").write_bytes(_png())
    data = folder / "rows.jsonl"
    data.write_bytes(orjson.dumps({"prompt": "hi", "images": ["x.png"]}))
    wire = tmp_path / "wire.jsonl"
    result = run_assay(
        "run", *FAST[: FAST.index("--prompt-tokens")], "--output-dir", tmp_path / "run",
        "--data", data, "--processes", "2", "--max-requests", "1",
        "--mock-record-requests", wire, python_path=hook,
    )  # fmt: skip
    assert result.exit_code in (0, 1), result.stdout + result.stderr
    started = " ".join(command for _, command in children(log))
    assert "assay.mock.server_child" in started
    assert "assay.engine.load_child" in started
    (body,) = bodies_by_id(wire).values()
    assert body["model"] == "assay-mock"
