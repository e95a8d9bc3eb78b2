"""A dataset that tries to send the user's files, run against the embedded mock on loopback
(issue 37, item 1): the file out of the folder is refused before any request, and an image with
a secret after its end marker reaches the server without it."""

from __future__ import annotations

import base64
import random
import time
from pathlib import Path

import orjson
import pytest
from tests.cli.cli_harness import run_assay, run_fast
from tests.cli.test_cli_bad_input import assert_one_error_line
from tests.cli.test_cli_multimodal import NO_FAULTS, ONE_PROCESS, user_parts
from tests.cli.wire import bodies_by_id

from assay.data.media import ImageSize, synthetic_image

CANARY = b"CANARY-7f3a-private-bytes"


def _png() -> bytes:
    return synthetic_image(ImageSize(width=16, height=16), "png", random.Random(9))


def test_a_path_out_of_the_dataset_folder_sends_nothing(tmp_path: Path) -> None:
    (tmp_path / "secret.png").write_bytes(_png() + CANARY)
    folder = tmp_path / "data"
    folder.mkdir()
    data = folder / "rows.jsonl"
    data.write_bytes(orjson.dumps({"prompt": "hi", "images": ["../secret.png"]}))
    wire = tmp_path / "wire.jsonl"
    started = time.monotonic()
    result = run_fast(
        tmp_path / "run", "--data", data, "--max-requests", "1", "--mock-record-requests", wire
    )
    assert_one_error_line(result, "rows.jsonl, line 1", "outside the folders")
    assert time.monotonic() - started < 30
    assert not wire.exists() or CANARY not in wire.read_bytes()


def test_bytes_after_an_images_end_never_reach_the_server(tmp_path: Path) -> None:
    (tmp_path / "a.png").write_bytes(_png() + CANARY)
    data = tmp_path / "rows.jsonl"
    data.write_bytes(orjson.dumps({"prompt": "hi", "images": ["a.png"]}))
    wire = tmp_path / "wire.jsonl"
    result = run_fast(
        tmp_path / "run", *ONE_PROCESS, *NO_FAULTS, "--data", data, "--max-requests", "2",
        "--data-cycle", "--mock-record-requests", wire,
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    bodies = bodies_by_id(wire)
    assert len(bodies) == 2
    for body in bodies.values():
        (image,) = [part for part in user_parts(body) if part["type"] == "image_url"]
        header, _, payload = image["image_url"]["url"].partition(",")
        assert header == "data:image/png;base64"
        assert base64.b64decode(payload) == _png()


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (("--images", "1000000"), ("1,000,000 images", "256")),
        (("--images", "uniform:1,1000"), ("1,000 images", "256")),
        (("--images", "8", "--image-size", "16384x16384"), ("2,147,483,648 pixels",)),
        (("--images", "3", "--image-size", "4096x4096"), ("50,331,648 pixels",)),
    ],
)
def test_absurd_image_counts_and_sizes_are_refused_before_the_load(
    tmp_path: Path, flags: tuple[str, ...], words: tuple[str, ...]
) -> None:
    wire = tmp_path / "wire.jsonl"
    result = run_fast(tmp_path / "run", *flags, "--mock-record-requests", wire)
    assert_one_error_line(result, "images:", "docs/security.md", *words)
    assert not wire.exists() or wire.stat().st_size == 0


@pytest.mark.parametrize(
    ("endpoint", "documents", "document_tokens", "total"),
    [
        ("rerank", "100000", "2000000", "200,000,000,032"),
        ("score", "8", "2097152", "16,777,248"),
    ],
)
def test_documents_times_their_tokens_are_held_to_the_request_size_limit(
    tmp_path: Path, endpoint: str, documents: str, document_tokens: str, total: str
) -> None:
    result = run_assay(
        "run", "--output-dir", tmp_path / "run", "--endpoint", endpoint, "--prompt-tokens", "32",
        "--documents", documents, "--document-tokens", document_tokens,
    )  # fmt: skip
    assert_one_error_line(result, "documents:", total, "2,097,152")


def test_allowed_media_path_names_another_folder_a_dataset_may_read(tmp_path: Path) -> None:
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "a.png").write_bytes(_png())
    folder = tmp_path / "data"
    folder.mkdir()
    data = folder / "rows.jsonl"
    data.write_bytes(orjson.dumps({"prompt": "hi", "images": ["../shared/a.png"]}))
    refused = run_fast(tmp_path / "refused", "--data", data, "--max-requests", "1")
    assert_one_error_line(refused, "line 1", "outside the folders", "--allowed-media-path")
    wire = tmp_path / "wire.jsonl"
    result = run_fast(
        tmp_path / "run", *ONE_PROCESS, *NO_FAULTS, "--data", data, "--max-requests", "1",
        "--allowed-media-path", tmp_path / "shared", "--mock-record-requests", wire,
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    (body,) = bodies_by_id(wire).values()
    (image,) = [part for part in user_parts(body) if part["type"] == "image_url"]
    assert base64.b64decode(image["image_url"]["url"].partition(",")[2]) == _png()


def test_allowed_media_path_without_data_is_refused(tmp_path: Path) -> None:
    result = run_fast(tmp_path / "run", "--allowed-media-path", tmp_path)
    assert_one_error_line(result, "--allowed-media-path", "--data")
