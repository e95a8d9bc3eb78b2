"""The built-in tokenizer: stable counts, lossless pieces, sampled text that re-counts exactly."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.data.tokenizer import _POOL_PIECES, MAX_PIECE_CHARS, BuiltinTokenizer, Tokenizer
from assay.errors import DataError

TOKENIZER = BuiltinTokenizer()


def test_builtin_tokenizer_meets_the_protocol() -> None:
    tokenizer: Tokenizer = TOKENIZER
    assert tokenizer.name == "builtin"


def test_words_carry_their_leading_space() -> None:
    assert TOKENIZER.pieces("The cat sat.") == ["The", " cat", " sat", "."]


def test_long_words_split_into_pieces_of_at_most_max_chars() -> None:
    word = "a" * (MAX_PIECE_CHARS * 2 + 1)
    assert TOKENIZER.count(word) == 3
    assert TOKENIZER.count(" " + word) == 3


def test_numbers_count_in_groups_of_three_digits() -> None:
    assert TOKENIZER.pieces("in 2026 or 1000000") == [
        "in",
        " 202",
        "6",
        " or",
        " 100",
        "000",
        "0",
    ]


def test_empty_text_has_no_tokens() -> None:
    assert TOKENIZER.count("") == 0
    assert TOKENIZER.encode("") == []
    assert TOKENIZER.sample_text(0, random.Random(1)) == ""


def test_negative_token_count_is_rejected() -> None:
    with pytest.raises(DataError, match="must be >= 0"):
        TOKENIZER.token_strings(-1, random.Random(1))


def test_encode_is_deterministic_and_one_id_per_token() -> None:
    text = "Benchmarks count only what was served, 100% of the time. Ünïcödé too!"
    ids = TOKENIZER.encode(text)
    assert ids == BuiltinTokenizer().encode(text)
    assert len(ids) == TOKENIZER.count(text)


def test_same_seed_samples_the_same_text() -> None:
    first = TOKENIZER.sample_text(64, random.Random(42))
    assert first == TOKENIZER.sample_text(64, random.Random(42))
    assert first != TOKENIZER.sample_text(64, random.Random(43))


@settings(max_examples=200, deadline=None)
@given(n_tokens=st.integers(min_value=0, max_value=400), seed=st.integers(0, 2**32))
def test_sampled_pieces_concatenate_to_exactly_their_count(n_tokens: int, seed: int) -> None:
    pieces = TOKENIZER.token_strings(n_tokens, random.Random(seed))
    assert len(pieces) == n_tokens
    assert all(TOKENIZER.count(piece) == 1 for piece in pieces)
    assert TOKENIZER.count("".join(pieces)) == n_tokens
    assert TOKENIZER.count(TOKENIZER.sample_text(n_tokens, random.Random(seed))) == n_tokens


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=200))
def test_pieces_of_any_text_join_back_to_it(text: str) -> None:
    pieces = TOKENIZER.pieces(text)
    assert "".join(pieces) == text
    assert len(pieces) == TOKENIZER.count(text) == len(TOKENIZER.encode(text))


@pytest.mark.parametrize(
    "n_tokens",
    [1, 2, _POOL_PIECES - 1, _POOL_PIECES, _POOL_PIECES + 1, 2 * _POOL_PIECES + 5],
)
@pytest.mark.parametrize("seed", range(6))
def test_sampled_text_counts_exactly_across_the_pool_boundary(n_tokens: int, seed: int) -> None:
    """Prompts are slices of a shared pool that wrap around it; every length counts exactly."""
    text = TOKENIZER.sample_text(n_tokens, random.Random(seed))
    assert TOKENIZER.count(text) == n_tokens
    assert not text.startswith((" ", ",", "."))


def test_prompts_of_different_seeds_start_at_different_places() -> None:
    prompts = {TOKENIZER.sample_text(32, random.Random(seed)) for seed in range(200)}
    assert len(prompts) == 200
