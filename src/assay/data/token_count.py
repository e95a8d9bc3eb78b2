"""How many tokens to ask for: a fixed count or a seeded distribution, and the CLI spelling.

A spec is a `Literal`-tagged union so it reads the same in Python, in JSON config and on the
command line ("256", "normal:256,32,64,512", "uniform:64,512").
"""

from __future__ import annotations

import random
from typing import Annotated, Literal, Self

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from assay.errors import DataError
from assay.spec.limits import MAX_TOKENS_PER_REQUEST


class FixedCount(BaseModel):
    """Always the same number of tokens."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["fixed"] = "fixed"
    value: int = Field(ge=0, le=MAX_TOKENS_PER_REQUEST)


class NormalCount(BaseModel):
    """A normal distribution, rounded to whole tokens and clamped to `[min, max]`.

    Clamping (rather than redrawing) keeps one draw per sample, so a request's count depends only
    on its own random stream.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["normal"] = "normal"
    mean: float
    stdev: float = Field(ge=0)
    min: int = Field(ge=0)
    max: int = Field(ge=0, le=MAX_TOKENS_PER_REQUEST)

    @model_validator(mode="after")
    def _bounds_in_order(self) -> Self:
        if self.min > self.max:
            raise ValueError(f"min ({self.min}) is greater than max ({self.max})")
        return self


class UniformCount(BaseModel):
    """Every whole count in `[min, max]` equally likely."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["uniform"] = "uniform"
    min: int = Field(ge=0)
    max: int = Field(ge=0, le=MAX_TOKENS_PER_REQUEST)

    @model_validator(mode="after")
    def _bounds_in_order(self) -> Self:
        if self.min > self.max:
            raise ValueError(f"min ({self.min}) is greater than max ({self.max})")
        return self


def _coerce(value: object) -> object:
    # Config files may spell a count as a bare integer or as the CLI string.
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return FixedCount(value=value)
    if isinstance(value, str):
        try:
            return parse_token_count(value)
        except DataError as error:
            # pydantic reports a ValueError as a validation error naming the field.
            raise ValueError(str(error)) from None
    return value


TokenCount = Annotated[
    FixedCount | NormalCount | UniformCount,
    BeforeValidator(_coerce),
    Field(discriminator="kind"),
]
"""A token-count spec; as a pydantic field it also accepts an int or the CLI string."""


def parse_token_count(text: str) -> FixedCount | NormalCount | UniformCount:
    """Parse the CLI spelling of a token count; a bad string is a `DataError` saying why.

    >>> parse_token_count("256")
    FixedCount(kind='fixed', value=256)
    >>> parse_token_count("uniform:64,512")
    UniformCount(kind='uniform', min=64, max=512)
    >>> parse_token_count("normal:256,32,64,512").mean
    256.0
    """
    spec = text.strip()
    kind, sep, rest = spec.partition(":")
    if not sep:
        return FixedCount(value=_non_negative_int(spec, text, "a token count"))
    parts = [part.strip() for part in rest.split(",")]
    match kind.strip().lower():
        case "fixed":
            _expect_parts(parts, 1, "fixed:N", text)
            return FixedCount(value=_non_negative_int(parts[0], text, "the count"))
        case "uniform":
            _expect_parts(parts, 2, "uniform:MIN,MAX", text)
            low = _non_negative_int(parts[0], text, "min")
            high = _non_negative_int(parts[1], text, "max")
            _expect_ordered(low, high, text)
            return UniformCount(min=low, max=high)
        case "normal":
            _expect_parts(parts, 4, "normal:MEAN,STDEV,MIN,MAX", text)
            mean = _number(parts[0], text, "mean")
            stdev = _number(parts[1], text, "stdev")
            if stdev < 0:
                raise DataError(f"bad token count {text!r}: stdev must not be negative")
            low = _non_negative_int(parts[2], text, "min")
            high = _non_negative_int(parts[3], text, "max")
            _expect_ordered(low, high, text)
            return NormalCount(mean=mean, stdev=stdev, min=low, max=high)
        case _:
            raise DataError(
                f"bad token count {text!r}: unknown distribution {kind!r} "
                "(use N, fixed:N, uniform:MIN,MAX or normal:MEAN,STDEV,MIN,MAX)"
            )


def sample_token_count(spec: FixedCount | NormalCount | UniformCount, rng: random.Random) -> int:
    """Draw one count from `spec` with `rng` (a fixed spec draws nothing).

    >>> sample_token_count(parse_token_count("uniform:5,5"), random.Random(1))
    5
    """
    match spec:
        case FixedCount(value=value):
            return value
        case UniformCount(min=low, max=high):
            return rng.randint(low, high)
        case NormalCount(mean=mean, stdev=stdev, min=low, max=high):
            return min(high, max(low, round(rng.gauss(mean, stdev))))


def smallest_count(spec: FixedCount | NormalCount | UniformCount) -> int:
    """The smallest count `spec` can produce.

    >>> smallest_count(parse_token_count("normal:256,32,64,512"))
    64
    """
    match spec:
        case FixedCount(value=value):
            return value
        case UniformCount(min=low) | NormalCount(min=low):
            return low


def largest_count(spec: FixedCount | NormalCount | UniformCount) -> int:
    """The largest count `spec` can produce.

    >>> largest_count(parse_token_count("normal:256,32,64,512"))
    512
    """
    match spec:
        case FixedCount(value=value):
            return value
        case UniformCount(max=high) | NormalCount(max=high):
            return high


def _expect_parts(parts: list[str], count: int, shape: str, text: str) -> None:
    if len(parts) != count:
        raise DataError(f"bad token count {text!r}: expected {shape}, got {len(parts)} value(s)")


def _expect_ordered(low: int, high: int, text: str) -> None:
    if low > high:
        raise DataError(f"bad token count {text!r}: min ({low}) is greater than max ({high})")


def _non_negative_int(part: str, text: str, what: str) -> int:
    try:
        value = int(part)
    except ValueError:
        raise DataError(f"bad token count {text!r}: {what} {part!r} is not an integer") from None
    if value < 0:
        raise DataError(f"bad token count {text!r}: {what} must not be negative")
    if value > MAX_TOKENS_PER_REQUEST:
        raise DataError(
            f"bad token count {text!r}: {what} is above {MAX_TOKENS_PER_REQUEST:,} tokens, the "
            "most one request may ask for (see docs/security.md)"
        )
    return value


def _number(part: str, text: str, what: str) -> float:
    try:
        value = float(part)
    except ValueError:
        raise DataError(f"bad token count {text!r}: {what} {part!r} is not a number") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise DataError(f"bad token count {text!r}: {what} must be finite")
    return value


__all__ = [
    "FixedCount",
    "NormalCount",
    "TokenCount",
    "UniformCount",
    "largest_count",
    "parse_token_count",
    "sample_token_count",
    "smallest_count",
]
