"""Every size a data file or flag can ask for is bounded and refused before any work (issue 21.1,
21.2): a trace row's `input_length` and `hash_ids`, output lengths, turns, token counts and the
file itself. Each refusal is one `DataError` naming the row, raised while the rows are read,
before a prompt is built (the limits are asserted by refusing up front, not by timing)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from pydantic import ValidationError

from assay.data import FileSource, FileSourceConfig, SyntheticSource
from assay.data.session import SampledTurns, SyntheticSessions
from assay.data.token_count import FixedCount, parse_token_count
from assay.data.trace import TraceConfig, load_trace
from assay.errors import DataError
from assay.spec.limits import MAX_DATA_FILE_BYTES, MAX_HASH_IDS, MAX_TOKENS_PER_REQUEST, MAX_TURNS
from assay.spec.run import RunConfig


def _trace(tmp_path: Path, *rows: dict[str, object]) -> Path:
    path = tmp_path / "trace.jsonl"
    path.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
    return path


def _load_trace(path: Path) -> None:
    load_trace(TraceConfig(path=path, model="m"))


SOUND = {"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]}


@pytest.mark.parametrize("key", ["input_length", "output_length"])
def test_a_trace_row_asking_for_more_tokens_than_the_limit_is_refused_naming_it(
    tmp_path: Path, key: str
) -> None:
    path = _trace(tmp_path, SOUND, {**SOUND, "timestamp": 5, key: 10_000_000_000})
    with pytest.raises(DataError, match=rf"trace.jsonl, line 2: '{key}' is 10,000,000,000"):
        _load_trace(path)


def test_a_trace_row_at_the_limit_is_accepted(tmp_path: Path) -> None:
    _load_trace(_trace(tmp_path, {**SOUND, "input_length": MAX_TOKENS_PER_REQUEST}))


def test_a_trace_row_naming_too_many_hash_blocks_is_refused(tmp_path: Path) -> None:
    path = _trace(tmp_path, {**SOUND, "hash_ids": list(range(MAX_HASH_IDS + 1))})
    with pytest.raises(DataError, match="line 1: 'hash_ids' names 65,537 blocks"):
        _load_trace(path)


@pytest.mark.parametrize("name", ["trace.jsonl", "prompts.jsonl"])
def test_a_data_file_above_the_size_limit_is_refused_before_it_is_read(
    tmp_path: Path, name: str
) -> None:
    path = tmp_path / name
    with path.open("wb") as handle:
        handle.truncate(MAX_DATA_FILE_BYTES + 1)  # sparse: no disk is used
    load = (
        _load_trace
        if name == "trace.jsonl"
        else lambda path: FileSource.load(FileSourceConfig(path=path, model="m"))
    )
    with pytest.raises(DataError, match="1,073,741,825 bytes, above the 1,073,741,824"):
        load(path)


def test_a_prompt_row_asking_for_too_many_output_tokens_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "prompts.jsonl"
    path.write_text('{"prompt": "hi", "output_tokens": 3000000}\n', encoding="utf-8")
    with pytest.raises(DataError, match="line 1: 'output_tokens' is 3,000,000"):
        FileSource.load(FileSourceConfig(path=path, model="m"))


def test_a_row_with_more_turns_than_a_session_may_have_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "sessions.jsonl"
    turns = ["hi"] * (MAX_TURNS + 1)
    path.write_bytes(orjson.dumps({"turns": turns}) + b"\n")
    with pytest.raises(DataError, match="line 1: 'turns' holds 1,025 turns"):
        FileSource.load(FileSourceConfig(path=path, model="m"))


@pytest.mark.parametrize(
    "spelling", ["10000000000", "uniform:1,10000000000", "normal:5,1,1,10000000000"]
)
def test_a_token_count_above_the_limit_is_refused(spelling: str) -> None:
    with pytest.raises(DataError, match="the most one request may ask for"):
        parse_token_count(spelling)
    with pytest.raises(ValidationError):
        FixedCount(value=MAX_TOKENS_PER_REQUEST + 1)


@pytest.mark.parametrize("field", [{"turns": 1_000_000_000}, {"trace_block_tokens": 10**10}])
def test_run_config_refuses_sizes_above_the_limits(field: dict[str, int]) -> None:
    with pytest.raises(ValidationError):
        RunConfig.model_validate(field)


def test_a_synthetic_session_builds_only_the_turns_it_is_asked_for() -> None:
    source = SyntheticSource(
        model="m", prompt_tokens=FixedCount(value=4), output_tokens=FixedCount(value=2)
    )
    session = SyntheticSessions(source, turns=MAX_TURNS).session(3)
    turns = session.turns
    assert isinstance(turns, SampledTurns)
    assert len(turns) == MAX_TURNS
    first = session.request(0, ())
    assert first.messages is not None
    assert turns[0] == turns[0]
    assert turns[5].text != turns[6].text  # each turn has its own stream
