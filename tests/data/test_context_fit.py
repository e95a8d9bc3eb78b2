"""A request that cannot fit the model's context window is refused before any load, naming the
row or the flags that ask for it (issue 21.1); what fits, or a source of unknown size, passes."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from assay.core import Endpoint
from assay.data import FileSource, FileSourceConfig, SyntheticSource
from assay.data.context_fit import ContextWindow, check_fits_context
from assay.data.session import FileSessions, SyntheticSessions
from assay.data.token_count import FixedCount, parse_token_count
from assay.data.trace import TraceConfig, load_trace
from assay.errors import DataError

WINDOW = ContextWindow(4096, "max_model_len of /v1/models")


def _jsonl(tmp_path: Path, name: str, *rows: dict[str, object]) -> Path:
    path = tmp_path / name
    path.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
    return path


def _refusal(source: object) -> str:
    with pytest.raises(DataError) as caught:
        check_fits_context(source, WINDOW)  # type: ignore[arg-type]  # every source kind
    return str(caught.value)


def test_synthetic_prompt_at_its_largest_plus_output_above_the_window_names_the_flags() -> None:
    source = SyntheticSource(
        model="m",
        prompt_tokens=parse_token_count("normal:1000,100,500,4000"),
        output_tokens=FixedCount(value=128),
    )
    message = _refusal(source)
    assert "--prompt-tokens at most 4,000 + --output-tokens 128 = 4,128 tokens" in message
    assert "context window of 4,096 tokens (max_model_len of /v1/models)" in message


def test_synthetic_requests_that_fit_exactly_pass() -> None:
    source = SyntheticSource(
        model="m", prompt_tokens=FixedCount(value=3968), output_tokens=FixedCount(value=128)
    )
    check_fits_context(source, WINDOW)


def test_an_extra_body_output_limit_is_the_one_counted() -> None:
    source = SyntheticSource(
        model="m", prompt_tokens=FixedCount(value=3000), extra_body={"max_tokens": 2000}
    )
    assert "the body's output limit 2,000 (--extra-body) = 5,000 tokens" in _refusal(source)


def test_embeddings_count_no_output() -> None:
    source = SyntheticSource(
        model="m", endpoint=Endpoint.embeddings, prompt_tokens=FixedCount(value=4096)
    )
    check_fits_context(source, WINDOW)


def test_a_synthetic_session_counts_every_user_turn_of_its_last_turn() -> None:
    source = SyntheticSource(
        model="m", prompt_tokens=FixedCount(value=600), output_tokens=FixedCount(value=100)
    )
    check_fits_context(SyntheticSessions(source, turns=6), WINDOW)  # 3,600 + 100
    message = _refusal(SyntheticSessions(source, turns=7))  # 4,200 + 100
    assert "7 user turns (--turns) of --prompt-tokens 600 + --output-tokens 100" in message


def test_a_trace_row_that_cannot_fit_is_named_by_its_line(tmp_path: Path) -> None:
    path = _jsonl(
        tmp_path,
        "trace.jsonl",
        {"timestamp": 0, "input_length": 3000, "output_length": 50, "hash_ids": [1]},
        {"timestamp": 9, "input_length": 4000, "output_length": 200, "hash_ids": [1]},
    )
    message = _refusal(load_trace(TraceConfig(path=path, model="m")))
    assert message.startswith(f"{path}, line 2: 'input_length' 4,000 + 'output_length' 200")


def test_a_data_row_counted_by_the_tokenizer_is_named_by_its_line(tmp_path: Path) -> None:
    long_prompt = " ".join(["word"] * 5000)
    path = _jsonl(
        tmp_path, "prompts.jsonl", {"prompt": "short"}, {"prompt": long_prompt, "output_tokens": 4}
    )
    rows = FileSource.load(FileSourceConfig(path=path, model="m", tokenizer="builtin"))
    assert f"{path}, line 2: a prompt of " in _refusal(rows)


def test_an_uncounted_row_is_refused_only_for_its_output_alone(tmp_path: Path) -> None:
    path = _jsonl(
        tmp_path,
        "prompts.jsonl",
        {"prompt": " ".join(["word"] * 5000), "output_tokens": 10},
        {"prompt": "hi", "output_tokens": 4096},
    )
    rows = FileSource.load(FileSourceConfig(path=path, model="m"))
    message = _refusal(rows)
    assert message.startswith(f"{path}, line 2: a prompt (at least 1 token) + the row's output")


def test_a_later_turn_of_a_data_session_counts_the_turns_before_it(tmp_path: Path) -> None:
    turn = " ".join(["word"] * 1500)
    path = _jsonl(tmp_path, "sessions.jsonl", {"turns": [turn, turn, turn], "output_tokens": 8})
    rows = FileSource.load(FileSourceConfig(path=path, model="m", tokenizer="builtin"))
    message = _refusal(FileSessions.of(rows))
    assert message.startswith(f"{path}, line 1, turn 3: 3 user turns of ")


def test_a_window_nothing_passes_is_not_asked_of_a_source_of_its_own() -> None:
    class OwnSource:
        def request(self, index: int) -> object:
            raise AssertionError("not built")

        def size(self) -> int | None:
            return None

    check_fits_context(OwnSource(), ContextWindow(1, "--context-window"))  # type: ignore[arg-type]
