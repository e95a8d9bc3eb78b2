"""How long one answer is, why it ends, and when each token goes out: drawn from the latency model;
and what it says, in output token pieces, as prose or as JSON, each piece exactly one token.

The plan is computed before anything is written, so the finish reason is true by construction:
"length" exactly when the limit cut what the model wanted to say. Every piece counts as one
token under the built-in tokenizer and the pieces concatenate to a text that counts as their
number, so the usage the mock reports is the truth about what it streamed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from assay.data.tokenizer import BuiltinTokenizer
from assay.mock.config import Fixed, LatencyModel, is_zero, sample


@dataclass(frozen=True, slots=True)
class OutputLength:
    """How many tokens an answer has and the true reason it ends."""

    tokens: int
    finish_reason: str  # "stop" or "length"


def plan_length(
    wanted: int,
    max_tokens: int | None,
    ignore_eos: bool = False,
    min_tokens: int = 0,
) -> OutputLength:
    """Cap what the model wants to say by the request's limits.

    `wanted` is the model's own length (EOS after that many tokens). `ignore_eos` with a limit
    gives exactly the limit; `min_tokens` holds EOS back until that many tokens.

    >>> plan_length(16, 8)
    OutputLength(tokens=8, finish_reason='length')
    >>> plan_length(5, 8)
    OutputLength(tokens=5, finish_reason='stop')
    >>> plan_length(5, 8, ignore_eos=True)
    OutputLength(tokens=8, finish_reason='length')
    >>> plan_length(2, None, min_tokens=4)
    OutputLength(tokens=4, finish_reason='stop')
    """
    if ignore_eos and max_tokens is not None:
        return OutputLength(max_tokens, "length")
    wanted = max(wanted, min_tokens)
    if max_tokens is not None and wanted >= max_tokens:
        # EOS would come after the last allowed token, so it is never generated.
        return OutputLength(max_tokens, "length")
    if ignore_eos:
        # No EOS and no limit: the output ends where the model's budget does, not on EOS.
        return OutputLength(wanted, "length")
    return OutputLength(wanted, "stop")


class LatencySampler:
    """Seeded draws of the latency model; knows when it never needs to sleep."""

    def __init__(self, model: LatencyModel, seed: int) -> None:
        self.model = model
        # Shared with text sampling, so one seed fixes a whole run.
        self.rng = random.Random(seed)
        self.instant = is_zero(model.time_to_first_token) and is_zero(model.inter_token_latency)
        output = model.output_tokens
        self._fixed_output = round(output.value) if isinstance(output, Fixed) else None

    def output_tokens(self) -> int:
        """What the model wants to say, in tokens (before any request limit).

        >>> from assay.mock.config import Uniform
        >>> sampler = LatencySampler(LatencyModel(output_tokens=Uniform(low=10, high=20)), seed=1)
        >>> all(10 <= sampler.output_tokens() <= 20 for _ in range(100))
        True
        """
        if self._fixed_output is not None:
            return self._fixed_output
        return max(0, round(sample(self.model.output_tokens, self.rng)))

    def time_to_first_token(self) -> float:
        """Seconds before the first token."""
        return sample(self.model.time_to_first_token, self.rng)

    def inter_token_latencies(self, gaps: int) -> list[float]:
        """Seconds between consecutive tokens, one draw per gap (empty when ITL is always 0)."""
        if is_zero(self.model.inter_token_latency):
            return []
        return [sample(self.model.inter_token_latency, self.rng) for _ in range(max(0, gaps))]


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


__all__ = ["LatencySampler", "OutputLength", "output_pieces", "plan_length"]
