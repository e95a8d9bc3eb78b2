"""Prompt files: JSONL and CSV rows become requests; every bad file names its line and fault."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from assay.core import Endpoint
from assay.data import FileSource, FileSourceConfig, PromptColumns, RequestSource
from assay.errors import DataError


def _load(path: Path, **changes: object) -> FileSource:
    config: dict[str, object] = {"path": path, "model": "tiny-llama"}
    config.update(changes)
    return FileSource.load(FileSourceConfig.model_validate(config))


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _fails(path: Path, **changes: object) -> str:
    with pytest.raises(DataError) as caught:
        _load(path, **changes)
    return str(caught.value)


def test_jsonl_prompts_become_chat_requests_with_row_output_tokens(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "prompts.jsonl",
        '{"prompt": "Summarise the plot of Hamlet.", "output_tokens": 200}\n'
        "\n"
        '{"prompt": "Translate \\"good morning\\" to French."}\n',
    )
    source = _load(path, output_tokens=64)
    assert source.size() == 2
    first = source.request(0)
    assert first.request_id == "req-00000000"
    assert first.endpoint is Endpoint.chat
    assert first.messages == ({"role": "user", "content": "Summarise the plot of Hamlet."},)
    assert first.max_output_tokens == 200
    assert source.request(1).max_output_tokens == 64
    assert source.rows[1].line == 3


def test_requests_cycle_through_the_rows_with_their_own_ids(tmp_path: Path) -> None:
    path = _write(tmp_path, "p.jsonl", '{"prompt": "one"}\n{"prompt": "two"}\n')
    source = _load(path, endpoint="completions")
    assert [source.request(index).prompt for index in range(5)] == [
        "one",
        "two",
        "one",
        "two",
        "one",
    ]
    assert source.request(4).request_id == "req-00000004"


def test_jsonl_messages_column_is_kept_as_the_conversation(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "chat.jsonl",
        '{"messages": [{"role": "system", "content": "Be brief."},'
        ' {"role": "user", "content": "What is TTFT?"}], "output_tokens": 32}\n',
    )
    request = _load(path).request(0)
    assert request.messages == (
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is TTFT?"},
    )
    assert request.prompt is None


def test_custom_column_names_are_used(tmp_path: Path) -> None:
    path = _write(tmp_path, "p.jsonl", '{"question": "Why is the sky blue?", "max_len": 12}\n')
    columns = PromptColumns(prompt="question", output_tokens="max_len")
    request = _load(path, columns=columns, endpoint="responses").request(0)
    assert request.prompt == "Why is the sky blue?"
    assert request.max_output_tokens == 12


def test_default_output_tokens_distribution_is_seeded_per_index(tmp_path: Path) -> None:
    path = _write(tmp_path, "p.jsonl", '{"prompt": "Hello there"}\n')
    source = _load(path, output_tokens="uniform:10,1000", seed=7)
    counts = [source.request(index).max_output_tokens for index in range(20)]
    again = _load(path, output_tokens="uniform:10,1000", seed=7)
    assert counts == [again.request(index).max_output_tokens for index in reversed(range(20))][::-1]
    assert all(count is not None and 10 <= count <= 1000 for count in counts)
    assert len(set(counts)) > 10


def test_csv_prompts_load_with_quoted_multiline_fields(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "prompts.csv",
        'prompt,output_tokens\n"Write a haiku\nabout latency",48\nList three primes,\n',
    )
    source = _load(path, output_tokens=16, endpoint="completions")
    assert source.size() == 2
    assert source.request(0).prompt == "Write a haiku\nabout latency"
    assert source.request(0).max_output_tokens == 48
    assert source.request(1).max_output_tokens == 16
    assert source.rows[1].line == 4


def test_tokenizer_counts_prompt_tokens_at_load(tmp_path: Path) -> None:
    path = _write(tmp_path, "p.jsonl", '{"prompt": "Hello, world"}\n')
    assert _load(path, tokenizer="builtin").request(0).prompt_tokens == 3
    assert _load(path).request(0).prompt_tokens is None


def test_embeddings_requests_carry_the_text_and_no_output_length(tmp_path: Path) -> None:
    path = _write(tmp_path, "p.jsonl", '{"prompt": "embed me", "output_tokens": 5}\n')
    request = _load(path, endpoint="embeddings").request(0)
    assert request.prompt == "embed me"
    assert request.max_output_tokens is None
    assert not request.stream


def test_pickled_file_source_round_trips_with_its_rows(tmp_path: Path) -> None:
    path = _write(tmp_path, "p.jsonl", '{"prompt": "alpha"}\n{"prompt": "beta"}\n')
    source = _load(path)
    copy = pickle.loads(pickle.dumps(source))
    path.unlink()
    assert copy == source
    assert copy.request(3) == source.request(3)


def test_file_source_meets_the_request_source_protocol(tmp_path: Path) -> None:
    path = _write(tmp_path, "p.jsonl", '{"prompt": "alpha"}\n')
    source: RequestSource = _load(path)
    assert source.size() == 1


def test_line_that_is_not_json_names_the_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "p.jsonl", '{"prompt": "ok"}\n{"prompt": "cut\n')
    message = _fails(path)
    assert "p.jsonl, line 2: not valid JSON" in message


def test_json_line_that_is_not_an_object_is_rejected(tmp_path: Path) -> None:
    path = _write(tmp_path, "p.jsonl", '["a", "list"]\n')
    assert "line 1: expected a JSON object, got a list" in _fails(path)


def test_missing_prompt_column_names_the_line_and_column(tmp_path: Path) -> None:
    path = _write(tmp_path, "p.jsonl", '{"prompt": "ok"}\n{"text": "wrong key"}\n')
    assert "line 2: no 'prompt' (or 'messages') in the row" in _fails(path)


def test_empty_prompt_names_the_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "p.jsonl", '{"prompt": "ok"}\n{"prompt": "ok"}\n{"prompt": "  "}\n')
    assert "line 3: empty prompt in 'prompt'" in _fails(path)


def test_prompt_that_is_not_text_is_rejected(tmp_path: Path) -> None:
    path = _write(tmp_path, "p.jsonl", '{"prompt": 42}\n')
    assert "line 1: 'prompt' must be text, got a number" in _fails(path)


@pytest.mark.parametrize(
    ("value", "complaint"),
    [
        ('"many"', "'output_tokens' must be an integer, got 'many'"),
        ("12.5", "'output_tokens' must be an integer, got 12.5"),
        ("true", "'output_tokens' must be an integer, got True"),
        ("0", "'output_tokens' must be at least 1, got 0"),
    ],
)
def test_non_integer_output_tokens_names_the_line(
    tmp_path: Path, value: str, complaint: str
) -> None:
    path = _write(
        tmp_path, "p.jsonl", f'{{"prompt": "ok"}}\n{{"prompt": "x", "output_tokens": {value}}}\n'
    )
    message = _fails(path)
    assert "line 2" in message
    assert complaint in message


def test_non_integer_output_tokens_in_csv_names_the_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "p.csv", "prompt,output_tokens\nfine,10\nnot fine,ten\n")
    assert "p.csv, line 3: 'output_tokens' must be an integer, got 'ten'" in _fails(path)


@pytest.mark.parametrize(
    ("messages", "complaint"),
    [
        ('"hello"', "'messages' must be a list of {role, content} objects, got text"),
        ("[]", "'messages' is an empty list"),
        ('["hi"]', "messages[0] must be an object, got text"),
        ('[{"content": "hi"}]', "messages[0] has no text 'role'"),
        ('[{"role": "user"}]', "messages[0] needs a 'content' that is text or a list of parts"),
        ('[{"role": "user", "content": ""}]', "'messages' holds no text in any message"),
    ],
)
def test_messages_with_a_bad_shape_name_the_line(
    tmp_path: Path, messages: str, complaint: str
) -> None:
    path = _write(tmp_path, "p.jsonl", f'\n{{"messages": {messages}}}\n')
    message = _fails(path)
    assert "line 2" in message
    assert complaint in message


def test_messages_only_row_for_a_text_endpoint_is_rejected(tmp_path: Path) -> None:
    path = _write(tmp_path, "p.jsonl", '{"messages": [{"role": "user", "content": "hi"}]}\n')
    message = _fails(path, endpoint="completions")
    assert "line 1: 'messages' needs the chat endpoint" in message


def test_empty_file_is_rejected(tmp_path: Path) -> None:
    assert "no prompts in the file" in _fails(_write(tmp_path, "p.jsonl", "\n\n"))
    assert "no prompts in the file" in _fails(_write(tmp_path, "p.csv", ""))
    assert "no prompts in the file" in _fails(_write(tmp_path, "h.csv", "prompt\n"))


def test_unknown_extension_is_rejected_unless_the_format_is_given(tmp_path: Path) -> None:
    path = _write(tmp_path, "prompts.txt", '{"prompt": "hi"}\n')
    assert "unknown prompt file type ('.txt')" in _fails(path)
    assert _load(path, format="jsonl").size() == 1


def test_missing_file_is_data_error(tmp_path: Path) -> None:
    assert "no such prompt file" in _fails(tmp_path / "absent.jsonl")


def test_csv_without_prompt_column_names_the_header(tmp_path: Path) -> None:
    path = _write(tmp_path, "p.csv", "question,answer\nwhy,because\n")
    message = _fails(path)
    assert "p.csv, line 1: no 'prompt', 'messages' or 'query' column" in message
    assert "question, answer" in message


def test_csv_row_with_wrong_field_count_names_the_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "p.csv", "prompt,output_tokens\nfine,1\nextra,2,3\n")
    assert "line 3: 3 fields, but the header has 2" in _fails(path)


def test_csv_empty_prompt_names_the_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "p.csv", "prompt,output_tokens\nfine,1\n,2\n")
    assert "line 3: empty prompt in 'prompt'" in _fails(path)


def test_malformed_csv_quoting_is_data_error(tmp_path: Path) -> None:
    path = _write(tmp_path, "p.csv", 'prompt\n"fine"\n"bad"quote\n')
    assert "malformed CSV" in _fails(path)


def test_invalid_utf8_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_bytes(b'{"prompt": "ok"}\n{"prompt": "caf\xe9"}\n')
    assert "line 2: not UTF-8 text" in _fails(path)
