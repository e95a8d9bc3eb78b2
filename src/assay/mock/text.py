"""What the mock says: output token pieces, as prose or as JSON, each piece exactly one token.

Every piece counts as one token under the built-in tokenizer and the pieces concatenate to a text
that counts as their number, so the usage the mock reports is the truth about what it streamed.
"""

from __future__ import annotations

import random

from assay.data.tokenizer import BuiltinTokenizer

# The shortest valid JSON documents of 1..7 tokens; from 8 tokens on, an object with a string.
_SHORT_JSON: tuple[tuple[str, ...], ...] = (
    (),
    ("0",),
    ("[", "]"),
    ("[", "0", "]"),
    ("[", '"', '"', "]"),
    ("[", "0", ",", "0", "]"),
    ("[", "0", ",", ' "', '"', "]"),
    ("[", "0", ",", "0", ",", "0", "]"),
)
_OBJECT_HEAD = ("{", '"', "answer", '"', ":", ' "')
_OBJECT_TAIL = ('"', "}")


def output_pieces(
    n_tokens: int, rng: random.Random, tokenizer: BuiltinTokenizer, json_mode: bool = False
) -> list[str]:
    """`n_tokens` one-token pieces: prose, or a JSON document when `json_mode`.

    >>> import json
    >>> tok = BuiltinTokenizer()
    >>> pieces = output_pieces(12, random.Random(0), tok, json_mode=True)
    >>> len(pieces), tok.count("".join(pieces)), sorted(json.loads("".join(pieces)))
    (12, 12, ['answer'])
    """
    if not json_mode:
        return tokenizer.token_strings(n_tokens, rng)
    if n_tokens < len(_SHORT_JSON):
        return list(_SHORT_JSON[n_tokens])
    # Words only inside the string: a "," or "." piece would still be one token but reads oddly.
    words = tokenizer.token_strings(n_tokens - len(_OBJECT_HEAD) - len(_OBJECT_TAIL), rng)
    words = [w if w not in {",", "."} else " and" for w in words]
    return [*_OBJECT_HEAD, *words, *_OBJECT_TAIL]


__all__ = ["output_pieces"]
