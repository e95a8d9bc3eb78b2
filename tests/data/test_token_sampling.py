"""The built-in tokenizer's sampling draws exactly what `random.choices` would: prompts of a
given seed are the same text as before it was made faster."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from assay.data.tokenizer import _CHOICES, _CUM_WEIGHTS, _WORDS, BuiltinTokenizer


def by_choices(n_tokens: int, rng: random.Random) -> list[str]:
    pieces = rng.choices(_CHOICES, cum_weights=_CUM_WEIGHTS, k=n_tokens)
    pieces[0] = rng.choice(_WORDS)
    return pieces


@given(st.integers(min_value=0, max_value=2**64), st.integers(min_value=1, max_value=300))
def test_token_strings_draw_what_random_choices_draws(seed: int, n_tokens: int) -> None:
    ours = BuiltinTokenizer().token_strings(n_tokens, random.Random(seed))
    assert ours == by_choices(n_tokens, random.Random(seed))


def test_punctuation_is_still_drawn() -> None:
    pieces = BuiltinTokenizer().token_strings(5_000, random.Random(3))
    assert {",", "."} <= set(pieces)
