"""A traffic mix: several served models (or LoRA adapters) in one run, each request naming one.

`--model a=0.7,b=0.2,c=0.1` weights the models (the weights are normalised), `--model a,b,c`
weighs them alike. `--model-mix` picks how a request's model is chosen:

- `random` (the default): request `i` draws its model from the weights, from `(seed, i)` alone,
  so every load process, Ray actor and rerun with the same seed picks the same model for it;
- `round-robin`: requests cycle one pattern in which each model appears as many times as its
  weight in whole numbers (`a=2,b=1` is `a, a, b, a, a, b, ...`; `a=0.7,b=0.3` is seven `a`
  then three `b`).

A single name (`--model x`) is no mix: the run is what it was before mixes existed.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from fractions import Fraction
from functools import reduce
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, PrivateAttr

MixOrder = Literal["random", "round-robin"]
"""How a mix picks request `i`'s model: drawn from the weights, or a cycling pattern."""

_MASK64: Final = (1 << 64) - 1
_UNIT_BITS: Final = 53
# The longest round-robin pattern: weights that need more are refused with a hint.
MAX_PATTERN: Final = 10_000
# A salt keeping the model's draw apart from the request's own random stream (`index_rng`).
_SALT: Final = 0x6D6F64656C6D6978


def parse_models(text: str) -> tuple[tuple[str, float], ...]:
    """The `(name, weight)` pairs of `--model`: `a=0.7,b=0.3`, or `a,b` (weight 1 each); a
    ValueError says what is wrong (an empty name, a weight that is not a number, a negative
    weight, a name given twice, weights that sum to zero, or names mixed with and without).

    >>> parse_models("a=0.7, b=0.3")
    (('a', 0.7), ('b', 0.3))
    >>> parse_models("a,b")
    (('a', 1.0), ('b', 1.0))
    >>> parse_models("a=1,a=2")
    Traceback (most recent call last):
    ValueError: model 'a' is named twice in 'a=1,a=2'
    """
    parts = [part.strip() for part in text.split(",")]
    weighted = ["=" in part for part in parts]
    if any(weighted) and not all(weighted):
        raise ValueError(
            f"{text!r}: give every model a weight (a=0.7,b=0.3) or none (a,b), not some"
        )
    pairs: list[tuple[str, float]] = []
    for part in parts:
        name, _, weight_text = part.partition("=")
        name = name.strip()
        if not name:
            raise ValueError(f"{text!r} has an empty model name")
        weight = 1.0
        if weight_text or part.endswith("="):
            weight = _weight(name, weight_text.strip())
        if any(name == seen for seen, _ in pairs):
            raise ValueError(f"model {name!r} is named twice in {text!r}")
        pairs.append((name, weight))
    if not sum(weight for _, weight in pairs) > 0:
        raise ValueError(f"{text!r}: the weights sum to zero; give at least one a weight above 0")
    return tuple(pairs)


def _weight(name: str, text: str) -> float:
    try:
        weight = float(text)
    except ValueError:
        raise ValueError(f"model {name!r}: weight {text!r} is not a number") from None
    if not math.isfinite(weight) or weight < 0:
        raise ValueError(f"model {name!r}: weight {text!r} must be a finite number >= 0")
    return weight


def canonical_models(text: str) -> str:
    """`--model` as a run keeps it: one name as it is, a mix without spaces, its weights as given
    (left out when all are alike and none was written).

    >>> canonical_models(" a = 0.7 , b=0.3 "), canonical_models("a, b"), canonical_models("x=1")
    ('a=0.7,b=0.3', 'a,b', 'x')
    """
    pairs = parse_models(text)
    if len(pairs) == 1:
        return pairs[0][0]
    if "=" not in text:
        return ",".join(name for name, _ in pairs)
    return ",".join(f"{name}={weight:g}" for name, weight in pairs)


def is_mix(text: str) -> bool:
    """Whether `--model` names more than one model (its text holds `,` or `=`)."""
    return "," in text or "=" in text


class ModelMix(BaseModel):
    """The models of a mix, their weights (as given), and how request `i`'s model is picked.

    >>> mix = ModelMix.of("a=2,b=1", "round-robin")
    >>> [mix.pick(0, i) for i in range(6)]
    ['a', 'a', 'b', 'a', 'a', 'b']
    >>> mix = ModelMix.of("a=6,b=3,c=1")
    >>> mix.pick(5, 123) == mix.pick(5, 123), mix.shares()
    (True, {'a': 0.6, 'b': 0.3, 'c': 0.1})
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    names: tuple[str, ...]
    weights: tuple[float, ...]
    order: MixOrder = "random"
    # Derived once: the cumulative weights as 53-bit thresholds, and the round-robin pattern.
    _thresholds: tuple[int, ...] = PrivateAttr(default=())
    _pattern: tuple[str, ...] = PrivateAttr(default=())

    @classmethod
    def of(cls, text: str, order: MixOrder = "random") -> ModelMix:
        """The mix `--model text` names (a ValueError for a bad one; see `parse_models`)."""
        pairs = parse_models(text)
        return cls(
            names=tuple(name for name, _ in pairs),
            weights=tuple(weight for _, weight in pairs),
            order=order,
        )

    def model_post_init(self, context: object, /) -> None:
        if len(self.names) != len(self.weights) or len(self.names) < 2:
            raise ValueError("a model mix names at least two models, each with one weight")
        total = sum(self.weights)
        running = 0.0
        thresholds: list[int] = []
        for weight in self.weights:
            running += weight
            thresholds.append(round(running / total * (1 << _UNIT_BITS)))
        thresholds[-1] = 1 << _UNIT_BITS
        self._thresholds = tuple(thresholds)
        if self.order == "round-robin":
            self._pattern = round_robin_pattern(self.names, self.weights)

    def shares(self) -> dict[str, float]:
        """Each model's share of the requests (the weights, normalised)."""
        total = sum(self.weights)
        return {name: weight / total for name, weight in zip(self.names, self.weights, strict=True)}

    def pick(self, seed: int, index: int) -> str:
        """The model of request (or session) `index` of a run seeded `seed`: a pure function of
        the two, so it is the same in every process."""
        if self.order == "round-robin":
            pattern = self._pattern
            return pattern[index % len(pattern)]
        draw = _unit_draw(seed, index)
        return self.names[bisect_right(self._thresholds, draw)]


def _unit_draw(seed: int, index: int) -> int:
    """A 53-bit number from `(seed, index)` (SplitMix64's finaliser), apart from the request's
    own random stream so a request's model is not tied to its prompt length."""
    mixed = (seed * 0x9E3779B97F4A7C15 + index * 0xD1B54A32D192ED03 + _SALT) & _MASK64
    mixed = ((mixed ^ (mixed >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    mixed = ((mixed ^ (mixed >> 27)) * 0x94D049BB133111EB) & _MASK64
    return (mixed ^ (mixed >> 31)) >> (64 - _UNIT_BITS)


def round_robin_pattern(names: tuple[str, ...], weights: tuple[float, ...]) -> tuple[str, ...]:
    """Each model in list order, as many times as its weight in the smallest whole numbers of
    the same ratios (0.7/0.2/0.1 is 7/2/1); a ValueError when that takes more than
    `MAX_PATTERN` requests.

    >>> round_robin_pattern(("a", "b"), (0.75, 0.25))
    ('a', 'a', 'a', 'b')
    """
    fractions = [Fraction(weight).limit_denominator(1000) for weight in weights]
    scale = reduce(math.lcm, (fraction.denominator for fraction in fractions), 1)
    counts = [int(fraction * scale) for fraction in fractions]
    common = reduce(math.gcd, counts)
    counts = [count // common for count in counts]
    if sum(counts) > MAX_PATTERN:
        raise ValueError(
            f"round-robin: the weights need a pattern of {sum(counts):,} requests (at most "
            f"{MAX_PATTERN:,}); give small whole-number weights such as a=3,b=1"
        )
    return tuple(name for name, count in zip(names, counts, strict=True) for _ in range(count))


__all__ = [
    "MAX_PATTERN",
    "MixOrder",
    "ModelMix",
    "canonical_models",
    "is_mix",
    "parse_models",
    "round_robin_pattern",
]
