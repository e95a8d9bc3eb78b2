"""Traces: Mooncake rows become prompts that really share their hash blocks; plain rows keep
their prompts and fields; times come from the trace, in timestamp order."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from assay.data import BuiltinTokenizer
from assay.data.trace import MooncakeTrace, PlainTrace, TraceConfig, load_trace
from assay.errors import DataError

TOKENIZER = BuiltinTokenizer()
BLOCK = 512
MOONCAKE = [
    {"timestamp": 1000, "input_length": 1300, "output_length": 20, "hash_ids": [7, 8, 9]},
    {"timestamp": 1250, "input_length": 1100, "output_length": 10, "hash_ids": [7, 8, 11]},
    {"timestamp": 1500, "input_length": 600, "output_length": 5, "hash_ids": [7, 12]},
    {"timestamp": 1750, "input_length": 512, "output_length": 5, "hash_ids": [13]},
]


def _write(tmp_path: Path, rows: list[dict[str, object]], name: str = "trace.jsonl") -> Path:
    path = tmp_path / name
    path.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
    return path


def _load(path: Path, **changes: object) -> MooncakeTrace | PlainTrace:
    config: dict[str, object] = {"path": path, "model": "m", "endpoint": "completions"}
    config.update(changes)
    return load_trace(TraceConfig.model_validate(config))


def _common_prefix(a: str, b: str) -> str:
    length = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        length += 1
    return a[:length]


def test_mooncake_prompts_sharing_hash_blocks_share_that_many_prefix_tokens(
    tmp_path: Path,
) -> None:
    trace = _load(_write(tmp_path, MOONCAKE))
    prompts = [str(trace.request(i).prompt) for i in range(4)]
    assert [TOKENIZER.count(p) for p in prompts] == [1300, 1100, 600, 512]
    # Two blocks shared (7, 8): the first 1024 tokens are the same text.
    shared = _common_prefix(prompts[0], prompts[1])
    assert TOKENIZER.count(shared) >= 2 * BLOCK
    assert prompts[1].startswith(prompts[0][: len(shared)])
    two_blocks = TOKENIZER.pieces(prompts[0])[: 2 * BLOCK]
    assert prompts[1].startswith("".join(two_blocks))
    # One block shared (7): exactly the first 512 tokens, then they differ.
    one_block = "".join(TOKENIZER.pieces(prompts[0])[:BLOCK])
    assert prompts[2].startswith(one_block)
    assert not prompts[2].startswith("".join(two_blocks))
    # No block shared: not even the first block's text.
    assert not prompts[3].startswith(one_block)


def test_mooncake_block_size_is_configurable(tmp_path: Path) -> None:
    rows = [
        {"timestamp": 0, "input_length": 64, "output_length": 4, "hash_ids": [1, 2]},
        {"timestamp": 5, "input_length": 64, "output_length": 4, "hash_ids": [1, 3]},
    ]
    trace = _load(_write(tmp_path, rows), block_tokens=32)
    first, second = (str(trace.request(i).prompt) for i in range(2))
    block = "".join(TOKENIZER.pieces(first)[:32])
    assert second.startswith(block)
    assert first != second


def test_mooncake_times_are_milliseconds_from_the_first_request(tmp_path: Path) -> None:
    trace = _load(_write(tmp_path, MOONCAKE))
    assert [trace.offset_ns(i) for i in range(4)] == [0, 250_000_000, 500_000_000, 750_000_000]
    request = trace.request(0)
    assert (request.max_output_tokens, request.prompt_tokens) == (20, 1300)


def test_plain_trace_rows_are_replayed_in_timestamp_order_with_their_fields(
    tmp_path: Path,
) -> None:
    rows = [
        {"timestamp": 40, "prompt": "second", "temperature": 0.5},
        {"timestamp": 10.5, "messages": [{"role": "user", "content": "first"}]},
    ]
    trace = _load(_write(tmp_path, rows), endpoint="chat")
    assert isinstance(trace, PlainTrace)
    assert [trace.offset_ns(i) for i in range(2)] == [0, 29_500_000]
    assert trace.request(0).messages == ({"role": "user", "content": "first"},)
    second = trace.request(1)
    assert second.messages == ({"role": "user", "content": "second"},)
    assert second.extra_body == {"temperature": 0.5}
    assert "timestamp" not in second.extra_body


@pytest.mark.parametrize(
    ("row", "words"),
    [
        ({"input_length": 5, "output_length": 1, "hash_ids": []}, "'timestamp' must be a number"),
        ({"timestamp": 0, "input_length": 0, "output_length": 1}, "'input_length' must be"),
        ({"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": ["a"]}, "hash_ids"),
        ({"timestamp": 0, "input_length": 5, "output_length": 1, "ttl": 3}, "unknown Mooncake"),
    ],
)
def test_bad_trace_rows_name_file_and_line(
    tmp_path: Path, row: dict[str, object], words: str
) -> None:
    good = {"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": [1]}
    path = _write(tmp_path, [good, row])
    with pytest.raises(DataError, match=rf"trace.jsonl, line 2: .*{words}"):
        _load(path)
