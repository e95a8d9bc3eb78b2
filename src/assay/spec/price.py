"""The server's price, a run setting: per hour for the whole server, `2.5` ($2.50 an hour) or
`8x2.5` (eight GPUs at $2.50 an hour each, $20 an hour)."""

from __future__ import annotations

import math
import re
from typing import Final

from pydantic import BaseModel, ConfigDict, Field

_PRICE: Final = re.compile(r"\s*(?:(\d+)\s*[xX*]\s*)?(\d+(?:\.\d*)?|\.\d+)\s*")


class Price(BaseModel):
    """The server's price: `gpus` GPUs at `usd_per_gpu_hour` each."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    usd_per_gpu_hour: float = Field(gt=0, allow_inf_nan=False)
    gpus: int = Field(default=1, ge=1)

    @property
    def usd_per_hour(self) -> float:
        """The whole server's price per hour."""
        return self.usd_per_gpu_hour * self.gpus

    def words(self) -> str:
        """The price as the console says it.

        >>> Price(usd_per_gpu_hour=2.5, gpus=8).words()
        '8 x $2.50/h = $20.00/h'
        >>> Price(usd_per_gpu_hour=1.2).words()
        '$1.20/h'
        """
        if self.gpus == 1:
            return f"${self.usd_per_hour:.2f}/h"
        return f"{self.gpus} x ${self.usd_per_gpu_hour:.2f}/h = ${self.usd_per_hour:.2f}/h"


def parse_price(text: str) -> Price:
    """`USD` or `GPUSxUSD` (per GPU hour) as a `Price`; `ValueError` saying what is expected.

    >>> parse_price("8x2.5").usd_per_hour
    20.0
    >>> parse_price("0")
    Traceback (most recent call last):
    ...
    ValueError: a price per hour must be above 0, as USD or GPUSxUSD (e.g. 2.5 or 8x2.5), got '0'
    """
    match = _PRICE.fullmatch(text)
    usd = float(match.group(2)) if match else 0.0
    gpus = int(match.group(1)) if match and match.group(1) else 1
    if not match or not usd > 0 or not math.isfinite(usd) or gpus < 1:
        raise ValueError(
            "a price per hour must be above 0, as USD or GPUSxUSD (e.g. 2.5 or 8x2.5), "
            f"got {text!r}"
        )
    return Price(usd_per_gpu_hour=usd, gpus=gpus)


def price_of_setting(value: object) -> object:
    """A price as a setting gives it: `USD`/`GPUSxUSD` text or a number of dollars an hour is
    parsed; anything else (a stored `Price`'s fields) is left to the model.

    >>> price_of_setting("8x2.5"), price_of_setting(3)
    (Price(usd_per_gpu_hour=2.5, gpus=8), Price(usd_per_gpu_hour=3.0, gpus=1))
    """
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        return parse_price(str(value))
    return value


__all__ = ["Price", "parse_price", "price_of_setting"]
