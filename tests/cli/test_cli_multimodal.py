"""Images and audio in chat, and transcriptions, end to end: the bodies the embedded mock
received, the records and report figures they produced, and the refusals of bad input."""

from __future__ import annotations

import base64
import io
import math
import random
import wave
from pathlib import Path
from typing import Any

import orjson
import pytest
from PIL import Image
from tests.cli.cli_harness import (
    assert_every_request_accounted,
    read_record_lines,
    read_report,
    run_assay,
    run_fast,
)
from tests.cli.test_cli_bad_input import assert_one_error_line
from tests.cli.wire import bodies_by_id, received

from assay.data.media import ImageFormat, ImageSize, data_url, synthetic_image
from assay.spec.limits import MAX_AUDIO_SECONDS

ONE_PROCESS = ("--processes", "1", "--profile", "concurrent", "--concurrency", "2")
NO_FAULTS = (
    *("--mock-fault", "empty_stream=0"),
    *("--mock-fault", "truncated_stream=0"),
    *("--mock-fault", "inband_error=0"),
)
INSTANT = ("--mock-ttft-ms", "0", "--mock-itl-ms", "0")


def user_parts(body: dict[str, Any]) -> list[dict[str, Any]]:
    content = body["messages"][-1]["content"]
    assert isinstance(content, list), content
    return content


def decoded_image(url: str) -> Image.Image:
    header, _, payload = url.partition(",")
    assert header.endswith(";base64")
    return Image.open(io.BytesIO(base64.b64decode(payload)))


def test_synthetic_images_are_data_urls_of_the_size_asked_and_charged_by_the_mock(
    tmp_path: Path,
) -> None:
    wire = tmp_path / "wire.jsonl"
    run = tmp_path / "run"
    result = run_fast(
        run, *ONE_PROCESS, *NO_FAULTS, "--max-requests", "4", "--images", "2",
        "--image-size", "64x32", "--mock-record-requests", wire,
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    bodies = bodies_by_id(wire)
    assert sorted(bodies) == [f"req-{i:08d}" for i in range(4)]
    urls: set[str] = set()
    for body in bodies.values():
        parts = user_parts(body)
        assert [part["type"] for part in parts] == ["text", "image_url", "image_url"]
        for part in parts[1:]:
            url = part["image_url"]["url"]
            assert url.startswith("data:image/png;base64,")
            image = decoded_image(url)
            assert (image.format, image.size) == ("PNG", (64, 32))
            urls.add(url)
    assert len(urls) == 8  # every image of every request is its own
    report = assert_every_request_accounted(run)
    per_image = math.ceil(64 / 28) * math.ceil(32 / 28)
    for line in read_record_lines(run):
        assert line["usage"]["prompt_tokens"] == 32 + 2 * per_image
        assert line["response"]["sent"]["images"] == 2
        assert line["response"]["sent"]["body_bytes"] > 2 * 100
    inputs = report.steps[0].metrics.inputs
    assert inputs is not None
    assert inputs.requests == 4
    assert inputs.images_per_request is not None
    assert inputs.images_per_request.mean == 2
    assert "Inputs: 2.0 images per request" in result.stdout


def test_jpeg_images_and_an_image_count_distribution_split_ttft(tmp_path: Path) -> None:
    wire = tmp_path / "wire.jsonl"
    run = tmp_path / "run"
    result = run_fast(
        run, *ONE_PROCESS, *NO_FAULTS, "--max-requests", "12", "--images", "uniform:0,2",
        "--image-size", "32x32", "--image-format", "jpeg", "--mock-record-requests", wire,
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    counts: set[int] = set()
    for body in bodies_by_id(wire).values():
        content = body["messages"][-1]["content"]
        images = (
            [p for p in content if p["type"] == "image_url"] if isinstance(content, list) else []
        )
        counts.add(len(images))
        for part in images:
            assert part["image_url"]["url"].startswith("data:image/jpeg;base64,")
    assert counts == {0, 1, 2}
    inputs = assert_every_request_accounted(run).steps[0].metrics.inputs
    assert inputs is not None
    assert sorted(inputs.ttft_ms_by_images) == ["0", "1", "2"]
    assert "TTFT by images per request: 0 images" in result.stdout


def test_audio_seconds_add_an_input_audio_wav_part(tmp_path: Path) -> None:
    wire = tmp_path / "wire.jsonl"
    run = tmp_path / "run"
    result = run_fast(
        run, *ONE_PROCESS, *NO_FAULTS, "--max-requests", "2", "--audio-seconds", "1.5",
        "--mock-record-requests", wire,
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    for body in bodies_by_id(wire).values():
        parts = user_parts(body)
        assert [part["type"] for part in parts] == ["text", "input_audio"]
        audio = parts[1]["input_audio"]
        assert audio["format"] == "wav"
        with wave.open(io.BytesIO(base64.b64decode(audio["data"]))) as wav:
            assert wav.getnframes() / wav.getframerate() == 1.5
    for line in read_record_lines(run):
        assert line["usage"]["prompt_tokens"] == 32 + 38  # ceil(1.5 s * 25)
        assert line["response"]["sent"]["audio_seconds"] == 1.5
    assert "1.5 s of audio per request" in result.stdout


def test_the_longest_audio_allowed_runs_and_is_built_once(tmp_path: Path) -> None:
    """`--audio-seconds` at its bound (MAX_AUDIO_SECONDS, 600 s): a chat body with 25.6 MB of
    base64 WAV fits the mock's 64 MiB, both requests are served, and they carry the same WAV
    (built once from the seed, not once per request)."""
    wire = tmp_path / "wire.jsonl"
    run = tmp_path / "run"
    result = run_fast(
        run, *ONE_PROCESS, *NO_FAULTS, "--max-requests", "2",
        "--audio-seconds", str(MAX_AUDIO_SECONDS), "--mock-record-requests", wire,
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    sent = [user_parts(body)[1]["input_audio"]["data"] for body in bodies_by_id(wire).values()]
    assert len(sent) == 2
    assert sent[0] == sent[1]
    with wave.open(io.BytesIO(base64.b64decode(sent[0]))) as wav:
        assert wav.getnframes() / wav.getframerate() == MAX_AUDIO_SECONDS
    for line in read_record_lines(run):
        assert line["status"] == "completed"
        assert line["response"]["sent"]["audio_seconds"] == MAX_AUDIO_SECONDS


@pytest.mark.parametrize("stream", [True, False])
def test_transcriptions_upload_wav_and_read_the_transcript(tmp_path: Path, stream: bool) -> None:
    wire = tmp_path / "wire.jsonl"
    run = tmp_path / "run"
    result = run_assay(
        "run", *INSTANT, *ONE_PROCESS, *NO_FAULTS, "--output-dir", run, "--max-requests", "3",
        "--endpoint", "transcriptions", "--audio-seconds", "2",
        "--stream" if stream else "--no-stream", "--mock-record-requests", wire,
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    lines = received(wire)
    assert {line["path"] for line in lines} == {"/v1/audio/transcriptions"}
    for line in lines:
        body = line["body"]
        assert body["model"] == "assay-mock"
        assert body["response_format"] == "json"
        assert body["stream"] == ("true" if stream else "false")
        assert body["audio_seconds"] == 2.0
    assert_every_request_accounted(run)
    for record in read_record_lines(run):
        assert record["status"] == "completed"
        assert record["response"]["text"]
        assert record["response"]["sent"]["audio_seconds"] == 2.0
        assert record["response"]["sent"]["body_bytes"] > 2 * 16_000 * 2
        assert record["response"]["streamed"] is stream
        # A streamed transcript's tokens are timed one by one: 2 s of audio, 6 chunks.
        assert len(record["timing"]["chunk_times_ns"]) == (6 if stream else 0)
    ttft = read_report(run).steps[0].metrics.latency.ttft_ms
    assert (ttft is not None and ttft.count == 3) is stream


def test_an_empty_transcript_is_empty_response(tmp_path: Path) -> None:
    run = tmp_path / "run"
    result = run_assay(
        "run", *INSTANT, *ONE_PROCESS, "--output-dir", run, "--max-requests", "2",
        "--endpoint", "transcriptions", "--audio-seconds", "1", "--no-stream",
        "--mock-fault", "empty_stream=1",
    )  # fmt: skip
    assert result.exit_code != 2, result.stderr
    codes = {line.get("code") for line in read_record_lines(run)}
    assert codes == {"empty_response"}


def _write_image(path: Path, size: tuple[int, int], image_format: ImageFormat = "png") -> bytes:
    data = synthetic_image(ImageSize(width=size[0], height=size[1]), image_format, random.Random(1))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return data


def test_dataset_images_are_files_urls_and_data_urls(tmp_path: Path) -> None:
    png = _write_image(tmp_path / "images" / "a.png", (56, 56))
    inline = data_url(_write_image(tmp_path / "b.jpg", (28, 28), "jpeg"), "image/jpeg")
    data = tmp_path / "rows.jsonl"
    rows = [
        {"prompt": "What is in a?", "images": ["images/a.png", "https://example.com/c.png"]},
        {"prompt": "And b?", "images": inline},
    ]
    data.write_bytes(b"\n".join(orjson.dumps(row) for row in rows))
    wire = tmp_path / "wire.jsonl"
    run = tmp_path / "run"
    result = run_fast(
        run, *ONE_PROCESS, *NO_FAULTS, "--data", data, "--max-requests", "2",
        "--mock-record-requests", wire,
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    bodies = bodies_by_id(wire)
    first = user_parts(bodies["req-00000000"])
    assert first[0] == {"type": "text", "text": "What is in a?"}
    assert first[1]["image_url"]["url"] == data_url(png, "image/png")
    assert first[2]["image_url"]["url"] == "https://example.com/c.png"
    second = user_parts(bodies["req-00000001"])
    assert second[1]["image_url"]["url"] == inline
    images = {line["id"]: line["response"]["sent"]["images"] for line in read_record_lines(run)}
    assert images == {"req-00000000": 2, "req-00000001": 1}


def test_a_llava_sharegpt_row_sends_its_image_without_the_placeholder(tmp_path: Path) -> None:
    _write_image(tmp_path / "coco" / "x.png", (28, 56))
    data = tmp_path / "llava.json"
    row = {
        "id": "1",
        "image": "coco/x.png",
        "conversations": [
            {"from": "human", "value": "<image>\nWhat is shown?"},
            {"from": "gpt", "value": "A smooth gradient."},
        ],
    }
    data.write_bytes(orjson.dumps([row]))
    wire = tmp_path / "wire.jsonl"
    result = run_fast(
        tmp_path / "run", *ONE_PROCESS, *NO_FAULTS, "--data", data, "--max-requests", "1",
        "--mock-record-requests", wire,
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    (body,) = bodies_by_id(wire).values()
    parts = user_parts(body)
    assert parts[0] == {"type": "text", "text": "What is shown?"}
    assert decoded_image(parts[1]["image_url"]["url"]).size == (28, 56)


@pytest.mark.parametrize(
    ("row", "words"),
    [
        ({"prompt": "p", "images": ["missing.png"]}, ("line 2", "images[0]", "missing.png")),
        ({"prompt": "p", "images": ["not_image.png"]}, ("line 2", "not_image.png", "not an image")),
        ({"prompt": "p", "images": "data:image/png;base64,AAAA"}, ("line 2", "not an image")),
    ],
)
def test_a_bad_dataset_image_is_one_error_line_naming_the_row(
    tmp_path: Path, row: dict[str, Any], words: tuple[str, ...]
) -> None:
    (tmp_path / "not_image.png").write_bytes(b"plain text, not a picture")
    _write_image(tmp_path / "ok.png", (28, 28))
    data = tmp_path / "rows.jsonl"
    data.write_bytes(
        orjson.dumps({"prompt": "fine", "images": "ok.png"}) + b"\n" + orjson.dumps(row)
    )
    result = run_fast(tmp_path / "run", "--data", data, "--max-requests", "1")
    assert_one_error_line(result, str(data), *words)


BAD_FLAGS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "negative_images": (("--images", "-1"), ("--images", "must not be negative")),
    "zero_width": (("--images", "1", "--image-size", "0x5"), ("--image-size", "0x5")),
    "size_not_wxh": (("--images", "1", "--image-size", "big"), ("--image-size", "WxH")),
    "negative_audio": (("--audio-seconds", "-1"), ("audio", "greater than or equal to 0")),
    "images_on_completions": (
        ("--endpoint", "completions", "--images", "1"),
        ("--images", "chat messages", "completions"),
    ),
    "audio_on_embeddings": (
        ("--endpoint", "embeddings", "--audio-seconds", "1"),
        ("--audio-seconds", "embeddings"),
    ),
    "images_in_sessions": (("--turns", "2", "--images", "1"), ("--images", "multi-turn")),
    "transcriptions_without_audio": (
        ("--endpoint", "transcriptions"),
        ("transcriptions", "--audio-seconds"),
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_FLAGS))
def test_bad_media_flags_are_one_error_line(tmp_path: Path, case: str) -> None:
    flags, words = BAD_FLAGS[case]
    result = run_assay("run", "--output-dir", tmp_path / "run", "--max-requests", "1", *flags)
    assert_one_error_line(result, *words)
