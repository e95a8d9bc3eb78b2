"""The HF tokenizer adapter: exact sampled lengths, loading from a file or folder, clear errors."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from tokenizers import Tokenizer, models, pre_tokenizers

from assay.data import BuiltinTokenizer, load_tokenizer
from assay.data.hf_tokenizer import HfTokenizer
from assay.errors import DataError


@pytest.mark.parametrize("n_tokens", [0, 1, 2, 7, 64, 300])
def test_word_level_sample_text_counts_exactly(word_level_file: Path, n_tokens: int) -> None:
    tokenizer = HfTokenizer.from_path(word_level_file)
    text = tokenizer.sample_text(n_tokens, random.Random(n_tokens))
    assert tokenizer.count(text) == n_tokens


@pytest.mark.parametrize("n_tokens", [1, 5, 33, 256])
def test_byte_level_bpe_sample_text_counts_exactly(
    byte_level_bpe_file: Path, n_tokens: int
) -> None:
    tokenizer = HfTokenizer.from_path(byte_level_bpe_file)
    for seed in range(5):
        text = tokenizer.sample_text(n_tokens, random.Random(seed))
        assert tokenizer.count(text) == n_tokens
        assert "<|endoftext|>" not in text


def test_sample_text_is_reproducible_from_the_rng(byte_level_bpe_file: Path) -> None:
    tokenizer = HfTokenizer.from_path(byte_level_bpe_file)
    first = tokenizer.sample_text(40, random.Random(3))
    assert first == tokenizer.sample_text(40, random.Random(3))
    assert first != tokenizer.sample_text(40, random.Random(4))


def test_token_strings_join_to_a_text_of_that_many_tokens(byte_level_bpe_file: Path) -> None:
    tokenizer = HfTokenizer.from_path(byte_level_bpe_file)
    pieces = tokenizer.token_strings(25, random.Random(8))
    assert len(pieces) == 25
    assert tokenizer.count("".join(pieces)) == 25


def test_encode_matches_count_and_skips_special_tokens(word_level_file: Path) -> None:
    tokenizer = HfTokenizer.from_path(word_level_file)
    ids = tokenizer.encode("The lazy dog.")
    assert len(ids) == tokenizer.count("The lazy dog.") == 4


def test_directory_holding_tokenizer_json_loads(word_level_file: Path) -> None:
    tokenizer = load_tokenizer(str(word_level_file.parent))
    assert isinstance(tokenizer, HfTokenizer)
    assert tokenizer.name == str(word_level_file.parent)
    assert tokenizer.count("the quick brown fox") == 4


def test_builtin_spec_and_none_give_the_builtin_tokenizer() -> None:
    assert isinstance(load_tokenizer(None), BuiltinTokenizer)
    assert isinstance(load_tokenizer("builtin"), BuiltinTokenizer)


def test_hub_id_is_refused_with_a_download_message() -> None:
    with pytest.raises(DataError, match="downloads from the Hugging Face hub are not available"):
        load_tokenizer("meta-llama/Llama-3.1-8B-Instruct")


def test_directory_without_tokenizer_json_is_data_error(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"directory without a tokenizer\.json"):
        load_tokenizer(str(tmp_path))


def test_file_that_is_not_json_is_data_error(tmp_path: Path) -> None:
    path = tmp_path / "tokenizer.json"
    path.write_text("<html>not a tokenizer</html>")
    with pytest.raises(DataError, match=r"tokenizer\.json: not a usable tokenizer\.json"):
        load_tokenizer(str(path))


def test_json_that_is_not_a_tokenizer_is_data_error(tmp_path: Path) -> None:
    path = tmp_path / "tokenizer.json"
    path.write_text('{"model": {"type": "Nonsense"}}')
    with pytest.raises(DataError, match=r"not a usable tokenizer\.json"):
        load_tokenizer(str(path))


def test_unknown_token_left_in_the_plain_vocabulary_is_not_sampled(tmp_path: Path) -> None:
    # "[UNK]" here is an ordinary vocabulary entry, not an added special token: its text
    # encodes to three unknown pieces, so sampling it would never settle on an exact count.
    words = ["[UNK]", "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "theta"]
    model = models.WordLevel(vocab={word: i for i, word in enumerate(words)}, unk_token="[UNK]")
    raw = Tokenizer(model)
    raw.pre_tokenizer = pre_tokenizers.Whitespace()
    path = tmp_path / "tokenizer.json"
    raw.save(str(path))
    tokenizer = HfTokenizer.from_path(path)
    text = tokenizer.sample_text(500, random.Random(2))
    assert tokenizer.count(text) == 500
    assert "[UNK]" not in text
