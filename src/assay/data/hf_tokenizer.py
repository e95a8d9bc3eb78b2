"""A real model's tokenization: the `Tokenizer` protocol over a local Hugging Face tokenizer.json.

Nothing is downloaded: a benchmark must not depend on reaching the hub, so a hub id is refused
with a message saying to pass the local file.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Final

import tokenizers

from assay.errors import DataError

TOKENIZER_FILE: Final = "tokenizer.json"
"""The file looked for when a directory is given."""

# Re-encoding decoded ids can merge or split a few tokens at a time; a handful of trim-or-extend
# rounds settles it for real vocabularies, and the bound keeps a pathological one from spinning.
_MAX_FIT_ROUNDS: Final = 32


class HfTokenizer:
    """Counts and samples text with a Hugging Face `tokenizers` model loaded from a local file.

    Counts cover the text alone (`add_special_tokens=False`): a server adds its BOS token and
    chat template on top, and reports those in its own usage.
    """

    def __init__(self, tokenizer: tokenizers.Tokenizer, name: str) -> None:
        self.name = name
        self._tokenizer = tokenizer
        self._pool: list[int] | None = None

    @classmethod
    def from_path(cls, spec: str | Path) -> HfTokenizer:
        """Load a tokenizer.json file, or the tokenizer.json inside a directory.

        >>> HfTokenizer.from_path("org/some-model")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        assay.errors.DataError: no tokenizer file or directory at 'org/some-model'; ...
        """
        file = _resolve(spec)
        try:
            tokenizer = tokenizers.Tokenizer.from_file(str(file))
        # tokenizers raises a bare `Exception` for unreadable and malformed files alike.
        except Exception as error:
            raise DataError(f"{file}: not a usable {TOKENIZER_FILE}: {error}") from None
        if tokenizer.get_vocab_size(with_added_tokens=False) == 0:
            raise DataError(f"{file}: the tokenizer has an empty vocabulary")
        return cls(tokenizer, str(spec))

    def count(self, text: str) -> int:
        """The number of tokens in `text`, without special tokens."""
        return len(self.encode(text))

    def encode(self, text: str) -> list[int]:
        """The token ids of `text`, without special tokens."""
        return list(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def sample_text(self, n_tokens: int, rng: random.Random) -> str:
        """Text that counts as exactly `n_tokens`: draw ids, decode, re-encode, trim or extend."""
        if n_tokens < 0:
            raise ValueError(f"n_tokens must be >= 0, got {n_tokens}")
        if n_tokens == 0:
            return ""
        pool = self._sampling_pool()
        ids = rng.choices(pool, k=n_tokens)
        for _ in range(_MAX_FIT_ROUNDS):
            text = self._tokenizer.decode(ids)
            actual = self.encode(text)
            if len(actual) == n_tokens:
                return text
            if len(actual) > n_tokens:
                ids = actual[:n_tokens]
            else:
                ids = actual + [
                    pool[rng.randrange(len(pool))] for _ in range(n_tokens - len(actual))
                ]
        raise DataError(
            f"tokenizer {self.name}: could not build a text of exactly {n_tokens} tokens "
            f"in {_MAX_FIT_ROUNDS} rounds (decoding and re-encoding its tokens does not settle)"
        )

    def token_strings(self, n_tokens: int, rng: random.Random) -> list[str]:
        """`n_tokens` pieces of one sampled text, cut at token ends; they join back to the text.

        A character split across byte-level tokens leaves an empty piece; the pieces still join
        to a text of exactly `n_tokens` tokens.
        """
        text = self.sample_text(n_tokens, rng)
        if n_tokens == 0:
            return []
        offsets = self._tokenizer.encode(text, add_special_tokens=False).offsets
        # Each piece runs to the end of its token, so a gap (a space the pre-tokenizer dropped)
        # leads the next piece, as " word" does in GPT-style vocabularies.
        ends = [end for _, end in offsets[:-1]] + [len(text)]
        starts = [0, *ends[:-1]]
        return [text[start:end] for start, end in zip(starts, ends, strict=True)]

    def _sampling_pool(self) -> list[int]:
        # Built on first use: decoding a 150k vocabulary takes a noticeable fraction of a second
        # and a tokenizer used only for counting never needs it.
        if self._pool is None:
            special = set(self._tokenizer.get_added_tokens_decoder())
            ids = [
                i
                for i in range(self._tokenizer.get_vocab_size(with_added_tokens=False))
                if i not in special
            ]
            texts = self._tokenizer.decode_batch([[i] for i in ids])
            # Printable, non-blank pieces only: control bytes and half characters (U+FFFD) make
            # prompts that servers reject or that re-encode to other tokens.
            printable = [
                (i, text)
                for i, text in zip(ids, texts, strict=True)
                if text.strip() and text.isprintable() and "\ufffd" not in text
            ]
            # Prefer tokens whose text encodes back to themselves (an `<unk>` kept in the plain
            # vocabulary does not), so sampled texts settle at once; keep the rest if none do.
            encoded = self._tokenizer.encode_batch(
                [text for _, text in printable], add_special_tokens=False
            )
            stable = [
                i
                for (i, _), encoding in zip(printable, encoded, strict=True)
                if encoding.ids == [i]
            ]
            self._pool = stable or [i for i, _ in printable]
            if not self._pool:
                raise DataError(f"tokenizer {self.name}: no printable tokens to sample from")
        return self._pool


def _resolve(spec: str | Path) -> Path:
    path = Path(spec).expanduser()
    if path.is_dir():
        file = path / TOKENIZER_FILE
        if not file.is_file():
            raise DataError(f"{path} is a directory without a {TOKENIZER_FILE}")
        return file
    if path.is_file():
        return path
    raise DataError(
        f"no tokenizer file or directory at {str(spec)!r}; downloads from the Hugging Face hub "
        f"are not available: download the model's {TOKENIZER_FILE} and pass its local path"
    )


__all__ = ["TOKENIZER_FILE", "HfTokenizer"]
