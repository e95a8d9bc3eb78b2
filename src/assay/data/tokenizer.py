"""Token counting without a download: the `Tokenizer` protocol and the built-in tokenizer.

The built-in tokenizer is a compiled regex, not a model's vocabulary: words with their leading
space, numbers, single punctuation marks and whitespace runs. Letter runs are cut into pieces of
at most `MAX_PIECE_CHARS` and digit runs into groups of three, so a count never depends on a
word list and stays stable across machines and versions. It is the default for synthetic
prompts and the mock server's usage, so both sides of a benchmark count the same way.
"""

from __future__ import annotations

import random
import re
import zlib
from array import array
from bisect import bisect_right
from functools import cache
from itertools import accumulate
from typing import Final, Protocol

from assay.errors import DataError

MAX_PIECE_CHARS: Final = 8
"""The longest letter run counted as one token; longer words count as several."""

# GPT-2 style: a leading space belongs to the word after it; `\s+(?!\S)` leaves the last space of
# a run to the word that follows, so "a  b" is "a", " ", " b".
_PIECE = re.compile(
    rf" ?[^\W\d_]{{1,{MAX_PIECE_CHARS}}}"  # letters, at most MAX_PIECE_CHARS per token
    r"| ?\d{1,3}"  # digits, in groups of three
    r"| ?(?:[^\w\s]|_)"  # one punctuation mark or symbol
    r"|\s+(?!\S)|\s+"  # whitespace runs
)

# Plain English words of at most MAX_PIECE_CHARS letters: each " word" is exactly one token, and
# a space before every word keeps two sampled words from merging into one run.
_WORD_LIST: Final = """
    the of and to in is that for it as was with be by on not he this are or his from at which
    but have an they you were her she there one all we their has been if more when will would
    who so no can time out into only other new some could these two may first then do any like
    my now over such our man me even most made after also did many well back through where much
    how your way down should because each just those people state good very make world still
    own see men work long here get both between life being under never day same another know
    while last might us great old year off come since against go came right used take three
    small large place number part water city light house point home hand high school every
    system group often always together early order river field story power open music paper
    answer simple table window garden market summer winter morning evening letter friend
    animal bridge forest island valley mountain language science history country question
    result reason moment example problem service report process program public social common
    general several certain clear strong short quick quiet bright green yellow silver golden
    travel follow carry return gather listen wonder measure explain decide begin change speak
    read write build plant cover cross learn stand sound note study watch paint check reach
    south north east west above below across around along behind beyond inside outside
    """
_WORDS: Final = tuple(_WORD_LIST.split())
_PUNCTUATION: Final = (",", ".")
# One punctuation mark per ~14 pieces reads like prose without crowding the text.
_CHOICES: Final = tuple(f" {w}" for w in _WORDS) + _PUNCTUATION
_CUM_WEIGHTS: Final = tuple(
    float(i + 1) if i < len(_WORDS) else len(_WORDS) + 0.04 * len(_WORDS) * (i - len(_WORDS) + 1)
    for i in range(len(_CHOICES))
)
_TOTAL_WEIGHT: Final = _CUM_WEIGHTS[-1] + 0.0
_IDS: Final = {piece: index for index, piece in enumerate(_CHOICES)}
# Pieces outside the sampling vocabulary get a stable id above it (crc32, not `hash`, which is
# salted per process).
_HASHED_ID_SPACE: Final = 1 << 20

# Sampled text is sliced from one pool of pieces drawn once per process from a fixed seed, so a
# prompt costs a copy of its characters instead of a draw per token; the caller's generator picks
# where the slice starts (and its first word), so prompts still differ by seed and by request.
_POOL_PIECES: Final = 1 << 15
_POOL_SEED: Final = 0x5EED


class Tokenizer(Protocol):
    """Counts, encodes and samples text under one tokenization."""

    name: str

    def count(self, text: str) -> int:
        """The number of tokens in `text`."""
        ...

    def encode(self, text: str) -> list[int]:
        """The token ids of `text`."""
        ...

    def sample_text(self, n_tokens: int, rng: random.Random) -> str:
        """Text that counts as exactly `n_tokens` under this tokenizer."""
        ...

    def token_strings(self, n_tokens: int, rng: random.Random) -> list[str]:
        """`n_tokens` pieces, each one token, whose concatenation counts as exactly `n_tokens`."""
        ...


class BuiltinTokenizer:
    """The deterministic regex tokenizer; needs no download and counts ~1 token per word.

    >>> tok = BuiltinTokenizer()
    >>> tok.count("Hello, world! 12345")
    6
    >>> tok.pieces("Hello, world! 12345")
    ['Hello', ',', ' world', '!', ' 123', '45']
    >>> text = tok.sample_text(20, random.Random(7))
    >>> tok.count(text)
    20
    """

    name: str = "builtin"

    def count(self, text: str) -> int:
        """The number of tokens in `text`.

        >>> BuiltinTokenizer().count("internationalization")
        3
        """
        return len(_PIECE.findall(text))

    def pieces(self, text: str) -> list[str]:
        """The token strings of `text`; they concatenate back to `text`.

        >>> BuiltinTokenizer().pieces("a  b")
        ['a', ' ', ' b']
        """
        return _PIECE.findall(text)

    def encode(self, text: str) -> list[int]:
        """Token ids: the sampling vocabulary's index, else a stable hash above it.

        >>> tok = BuiltinTokenizer()
        >>> tok.encode(" the quick fox") == tok.encode(" the quick fox")
        True
        >>> len(tok.encode("the quick fox"))
        3
        """
        base = len(_CHOICES)
        return [
            _IDS.get(piece, base + zlib.crc32(piece.encode()) % _HASHED_ID_SPACE)
            for piece in _PIECE.findall(text)
        ]

    def token_strings(self, n_tokens: int, rng: random.Random) -> list[str]:
        """`n_tokens` pieces of English-ish prose, the first without a leading space.

        >>> tok = BuiltinTokenizer()
        >>> pieces = tok.token_strings(5, random.Random(1))
        >>> len(pieces), tok.count("".join(pieces))
        (5, 5)
        """
        if n_tokens < 0:
            raise DataError(f"a token count must be >= 0, got {n_tokens}")
        if n_tokens == 0:
            return []
        # `rng.choices(_CHOICES, cum_weights=_CUM_WEIGHTS, k=n_tokens)`, piece for piece: one
        # `random()` per piece, scaled by the total weight. Word i's cumulative weight is i + 1,
        # so below the words' total the bisection lands on `int(x)`; only the rare punctuation
        # draws bisect. (About a third of `choices`' cost: prompts are built per request.)
        draw = rng.random
        words = len(_WORDS)
        last = len(_CHOICES) - 1
        pieces = [
            _CHOICES[int(x)] if x < words else _CHOICES[bisect_right(_CUM_WEIGHTS, x, 0, last)]
            for x in [draw() * _TOTAL_WEIGHT for _ in range(n_tokens)]
        ]
        # Start with a word: text opening with "," reads wrong, and " word" loses its space.
        pieces[0] = rng.choice(_WORDS)
        return pieces

    def sample_text(self, n_tokens: int, rng: random.Random) -> str:
        """Text that counts as exactly `n_tokens`: a word, then `n_tokens - 1` pieces of the
        shared pool from an offset drawn from `rng` (wrapping around it as often as needed).

        Every pool piece is " word", "," or ".", each one token whatever precedes it, so any run
        of them after a word counts exactly its length. The cost is one slice of the pool's text
        per pool length, independent of how the pieces were drawn.

        >>> BuiltinTokenizer().count(BuiltinTokenizer().sample_text(100, random.Random(3)))
        100
        """
        if n_tokens < 0:
            raise DataError(f"a token count must be >= 0, got {n_tokens}")
        if n_tokens == 0:
            return ""
        text, offsets = _pool()
        first = _WORDS[int(rng.random() * len(_WORDS))]
        start = int(rng.random() * _POOL_PIECES)
        laps, end = divmod(start + n_tokens - 1, _POOL_PIECES)
        if laps == 0:
            return first + text[offsets[start] : offsets[end]]
        return "".join((first, text[offsets[start] :], text * (laps - 1), text[: offsets[end]]))


@cache
def _pool() -> tuple[str, array[int]]:
    """The shared pool's text and the character offset of each of its pieces (and of its end).

    Drawn like `token_strings` but with a space before every word, the first included, so the
    pool can be sliced anywhere and wrapped around onto itself.
    """
    draw = random.Random(_POOL_SEED).random
    words = len(_WORDS)
    last = len(_CHOICES) - 1
    pieces = [
        _CHOICES[int(x)] if x < words else _CHOICES[bisect_right(_CUM_WEIGHTS, x, 0, last)]
        for x in [draw() * _TOTAL_WEIGHT for _ in range(_POOL_PIECES)]
    ]
    offsets = array("q", accumulate(map(len, pieces), initial=0))
    return "".join(pieces), offsets


__all__ = ["MAX_PIECE_CHARS", "BuiltinTokenizer", "Tokenizer"]
