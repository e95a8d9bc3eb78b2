"""Synthetic requests: exact prompt lengths, per-index determinism, shared prefixes, pickling."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import TypeAdapter, ValidationError

from assay.core import Endpoint, GenerationRequest
from assay.data import (
    BuiltinTokenizer,
    FixedCount,
    NormalCount,
    RequestSource,
    SourceConfig,
    SyntheticSource,
    Tokenizer,
    UniformCount,
    build_source,
    load_tokenizer,
    parse_token_count,
)


def _text(request: GenerationRequest) -> str:
    if request.messages is not None:
        content = request.messages[0]["content"]
        assert isinstance(content, str)
        return content
    assert isinstance(request.prompt, str)
    return request.prompt


def _source(**changes: object) -> SyntheticSource:
    config: dict[str, object] = {
        "model": "tiny-llama",
        "prompt_tokens": "uniform:16,300",
        "output_tokens": "normal:64,16,8,128",
        "seed": 42,
    }
    config.update(changes)
    return SyntheticSource.model_validate(config)


def test_chat_prompt_has_exactly_the_sampled_token_count_under_builtin() -> None:
    source = _source()
    tokenizer = BuiltinTokenizer()
    for index in range(40):
        request = source.request(index)
        assert request.endpoint is Endpoint.chat
        assert request.messages is not None
        assert request.messages[0]["role"] == "user"
        assert request.prompt_tokens is not None
        assert 16 <= request.prompt_tokens <= 300
        assert tokenizer.count(_text(request)) == request.prompt_tokens


def test_prompt_has_exactly_the_sampled_token_count_under_hf_tokenizer(
    byte_level_bpe_file: Path,
) -> None:
    source = _source(endpoint="completions", tokenizer=str(byte_level_bpe_file))
    tokenizer = load_tokenizer(str(byte_level_bpe_file))
    for index in range(20):
        request = source.request(index)
        assert request.prompt_tokens is not None
        assert tokenizer.count(_text(request)) == request.prompt_tokens


def test_output_tokens_are_sampled_within_bounds_and_set_as_max() -> None:
    source = _source(ignore_eos=True)
    counts = {source.request(index).max_output_tokens for index in range(200)}
    assert all(count is not None and 8 <= count <= 128 for count in counts)
    assert len(counts) > 20
    assert source.request(0).ignore_eos


def test_request_ids_derive_from_the_index() -> None:
    source = _source()
    assert source.request(0).request_id == "req-00000000"
    assert source.request(1234).request_id == "req-00001234"


def test_request_depends_only_on_seed_and_index_not_build_order() -> None:
    forward = _source()
    backward = _source()
    in_order = [forward.request(index) for index in range(30)]
    reversed_order = [backward.request(index) for index in reversed(range(30))]
    assert in_order == list(reversed(reversed_order))
    assert _source().request(17) == in_order[17]


def test_different_seed_gives_different_prompts() -> None:
    assert _text(_source(seed=1).request(3)) != _text(_source(seed=2).request(3))


def test_shared_prefix_is_identical_across_requests_and_counted() -> None:
    source = _source(shared_prefix_tokens=16)
    tokenizer = BuiltinTokenizer()
    prefix = source.shared_prefix()
    assert tokenizer.count(prefix) == 16
    texts = []
    for index in range(30):
        request = source.request(index)
        text = _text(request)
        assert text.startswith(prefix)
        assert tokenizer.count(text) == request.prompt_tokens
        texts.append(text)
    assert len(set(texts)) == 30


def test_shared_prefix_fits_exactly_under_hf_tokenizer(word_level_file: Path) -> None:
    source = _source(shared_prefix_tokens=10, tokenizer=str(word_level_file))
    tokenizer: Tokenizer = load_tokenizer(str(word_level_file))
    prefix = source.shared_prefix()
    for index in range(10):
        request = source.request(index)
        assert _text(request).startswith(prefix)
        assert tokenizer.count(_text(request)) == request.prompt_tokens


def test_prompt_as_long_as_the_prefix_is_the_prefix_alone() -> None:
    source = _source(prompt_tokens=12, shared_prefix_tokens=12)
    assert _text(source.request(0)) == source.shared_prefix()


def test_shared_prefix_longer_than_smallest_prompt_is_rejected() -> None:
    with pytest.raises(ValidationError, match=r"shared_prefix_tokens \(20\) exceeds"):
        _source(prompt_tokens="uniform:16,300", shared_prefix_tokens=20)


def test_zero_length_prompt_or_output_is_rejected() -> None:
    with pytest.raises(ValidationError, match="prompt_tokens must be at least 1"):
        _source(prompt_tokens=0)
    with pytest.raises(ValidationError, match="output_tokens must be at least 1"):
        _source(output_tokens="uniform:0,4")


def test_embeddings_batch_holds_inputs_of_exact_lengths_and_does_not_stream() -> None:
    source = _source(endpoint="embeddings", embeddings_batch_size=4)
    request = source.request(7)
    assert isinstance(request.prompt, tuple)
    assert len(request.prompt) == 4
    assert request.echo().expected_embeddings == 4
    assert request.max_output_tokens is None
    assert not request.stream
    tokenizer = BuiltinTokenizer()
    assert sum(tokenizer.count(text) for text in request.prompt) == request.prompt_tokens


def test_responses_endpoint_gets_prompt_text_and_extra_body() -> None:
    source = _source(endpoint="responses", extra_body={"temperature": 0.0}, stream=False)
    request = source.request(2)
    assert isinstance(request.prompt, str)
    assert request.messages is None
    assert request.extra_body == {"temperature": 0.0}
    assert not request.stream


def test_pickled_source_round_trips_and_builds_the_same_requests() -> None:
    source = _source(shared_prefix_tokens=8)
    before = source.request(5)
    copy = pickle.loads(pickle.dumps(source))
    assert copy == source
    assert copy.request(5) == before


def test_pickle_does_not_carry_the_built_tokenizer_or_prefix() -> None:
    source = _source(shared_prefix_tokens=16)
    fresh = pickle.dumps(source)
    source.request(0)
    assert source.shared_prefix()
    assert pickle.dumps(source) == fresh


def test_source_meets_the_request_source_protocol() -> None:
    source: RequestSource = _source()
    assert source.size() is None


def test_config_round_trips_through_json() -> None:
    source = SyntheticSource(
        model="m",
        prompt_tokens=NormalCount(mean=100, stdev=10, min=50, max=150),
        output_tokens=UniformCount(min=1, max=9),
        shared_prefix_tokens=50,
    )
    assert SyntheticSource.model_validate_json(source.model_dump_json()) == source
    assert parse_token_count("7") == FixedCount(value=7)


def test_another_process_with_another_hash_seed_builds_the_same_request() -> None:
    # `hash()` of text is salted per process; the per-index stream must not depend on it.
    script = (
        "from assay.data import SyntheticSource\n"
        "source = SyntheticSource(model='m', prompt_tokens='uniform:8,64', seed=5,"
        " shared_prefix_tokens=8)\n"
        "print(source.request(9).model_dump_json())\n"
    )
    environment = {**os.environ, "PYTHONHASHSEED": "12345"}
    result = subprocess.run(
        [sys.executable, "-c", script],
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    here = SyntheticSource(
        model="m", prompt_tokens=parse_token_count("uniform:8,64"), seed=5, shared_prefix_tokens=8
    )
    assert GenerationRequest.model_validate_json(result.stdout) == here.request(9)


def test_source_config_builds_either_kind_of_source(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text('{"prompt": "hello"}\n')
    holder = TypeAdapter(SourceConfig)
    synthetic = build_source(holder.validate_python({"kind": "synthetic", "model": "m"}))
    assert synthetic.size() is None
    from_file = build_source(holder.validate_python({"kind": "file", "model": "m", "path": path}))
    assert from_file.size() == 1
