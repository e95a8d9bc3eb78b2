"""A setting the run would ignore is refused, not dropped, whether a flag or a config file's key
gave it (both go through the same sections); the same setting where it applies is accepted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from assay.config import build_config, load_config_file
from assay.errors import ConfigError

# Each case: keys the run would ignore, and words the refusal holds.
IGNORED: dict[str, tuple[dict[str, Any], tuple[str, ...]]] = {
    "data_column_without_data": (
        {"data_columns": {"prompt": "q"}},
        ("--data-column", "--data FILE"),
    ),
    "image_size_without_images": ({"image_size": "64x64"}, ("--image-size", "--images N")),
    "image_format_without_images": ({"image_format": "jpeg"}, ("--image-format", "--images N")),
    "image_size_with_no_image": (
        {"images": "0", "image_size": "64x64"},
        ("--image-size", "none is sent"),
    ),
    "trace_block_tokens_without_trace": (
        {"trace_block_tokens": 64},
        ("--trace-block-tokens", "--trace FILE"),
    ),
    "output_tokens_with_trace": (
        {"profile": "replay", "trace": "trace.jsonl", "output_tokens": "16"},
        ("--output-tokens", "with --trace"),
    ),
    "images_with_trace": (
        {"profile": "replay", "trace": "trace.jsonl", "images": "1"},
        ("--images", "with --trace", "text alone"),
    ),
    "audio_with_data": (
        {"data": "prompts.jsonl", "audio_seconds": 2.0},
        ("--audio-seconds", "with --data", "no audio"),
    ),
    "scrape_interval_without_scrapes": (
        {"server_metrics": "off", "server_metrics_interval": 2.0},
        ("--server-metrics-interval", "off"),
    ),
}

# The same settings where the run uses them.
APPLIED: dict[str, dict[str, Any]] = {
    "data_column_with_data": {"data": "prompts.jsonl", "data_columns": {"prompt": "q"}},
    "image_size_with_images": {"images": "2", "image_size": "64x64", "image_format": "jpeg"},
    "trace_block_tokens_with_trace": {
        "profile": "replay",
        "trace": "trace.jsonl",
        "trace_block_tokens": 64,
    },
    "audio_without_data": {"audio_seconds": 2.0},
    "no_audio_with_data": {"data": "prompts.jsonl", "audio_seconds": 0.0},
    "scrape_interval_with_scrapes": {"server_metrics_interval": 2.0},
    "gpu_scrape_interval_without_server_scrapes": {
        "server_metrics": "off",
        "gpu_metrics": "http://127.0.0.1:9400/metrics",
        "server_metrics_interval": 2.0,
    },
}


@pytest.mark.parametrize("case", sorted(IGNORED))
def test_a_flag_the_run_would_ignore_is_refused(case: str) -> None:
    keys, words = IGNORED[case]
    with pytest.raises(ConfigError) as refused:
        build_config({}, keys)
    for word in words:
        assert word in str(refused.value), (word, str(refused.value))


@pytest.mark.parametrize("case", sorted(IGNORED))
def test_a_config_key_the_run_would_ignore_is_refused(tmp_path: Path, case: str) -> None:
    keys, _ = IGNORED[case]
    config = tmp_path / "assay.toml"
    config.write_text("\n".join(f"{key} = {_toml(value)}" for key, value in keys.items()))
    with pytest.raises(ConfigError) as refused:
        build_config(load_config_file(config), {})
    # Named as the file wrote it: the last key (each case's ignored one).
    assert list(keys)[-1] in str(refused.value)


@pytest.mark.parametrize("case", sorted(APPLIED))
def test_the_same_setting_where_the_run_uses_it_is_accepted(case: str) -> None:
    build_config({}, APPLIED[case])


def _toml(value: object) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key} = {_toml(item)}" for key, item in value.items()) + "}"
    if isinstance(value, str):
        return f'"{value}"'
    return str(value)
