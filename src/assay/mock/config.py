"""What the mock server is told: its latency model, fault rates, seed and model name.

A quantity of the latency model is a fixed value or a seeded distribution; `sample` draws one
value from it, so a test checks the model's draws instead of timing sleeps.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Annotated, Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from assay.mock.capacity import ServerModel
from assay.mock.faults import FAULTS


class Fixed(BaseModel):
    """Always the same value.

    >>> sample(Fixed(value=3.0), random.Random(0))
    3.0
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["fixed"] = "fixed"
    value: float = Field(ge=0)


class Normal(BaseModel):
    """A normal distribution clipped to `[min, max]` (a latency is never negative).

    >>> normal = Normal(mean=10, stdev=2, min=8, max=11)
    >>> draws = [sample(normal, random.Random(seed)) for seed in range(50)]
    >>> 8 <= min(draws) and max(draws) <= 11
    True
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["normal"] = "normal"
    mean: float = Field(ge=0)
    stdev: float = Field(ge=0)
    min: float = Field(default=0.0, ge=0)
    max: float | None = None

    @model_validator(mode="after")
    def _bounds_are_ordered(self) -> Self:
        if self.max is not None and self.max < self.min:
            raise ValueError(f"max ({self.max}) is below min ({self.min})")
        return self


class Uniform(BaseModel):
    """Uniform on `[low, high]`.

    >>> 1 <= sample(Uniform(low=1, high=2), random.Random(0)) <= 2
    True
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["uniform"] = "uniform"
    low: float = Field(ge=0)
    high: float = Field(ge=0)

    @model_validator(mode="after")
    def _bounds_are_ordered(self) -> Self:
        if self.high < self.low:
            raise ValueError(f"high ({self.high}) is below low ({self.low})")
        return self


Distribution = Annotated[Fixed | Normal | Uniform, Field(discriminator="kind")]


def sample(distribution: Fixed | Normal | Uniform, rng: random.Random) -> float:
    """One draw from `distribution`.

    >>> sample(Uniform(low=5, high=5), random.Random(1))
    5.0
    """
    match distribution:
        case Fixed(value=value):
            return value
        case Normal(mean=mean, stdev=stdev, min=low, max=high):
            value = max(low, rng.gauss(mean, stdev))
            return value if high is None else min(high, value)
        case Uniform(low=low, high=high):
            return rng.uniform(low, high)


def is_zero(distribution: Fixed | Normal | Uniform) -> bool:
    """Whether every draw is 0: the mock then skips sleeping altogether.

    >>> is_zero(Fixed(value=0)), is_zero(Uniform(low=0, high=0.1))
    (True, False)
    """
    match distribution:
        case Fixed(value=value):
            return value == 0
        case Normal(mean=mean, stdev=stdev, max=high):
            return high == 0 or (mean == 0 and stdev == 0)
        case Uniform(high=high):
            return high == 0


class LatencyModel(BaseModel):
    """Time to first token and inter-token latency in seconds, and the model's output length.

    The output length is what the model "wants" to say; `max_tokens` caps it and `ignore_eos`
    replaces it with exactly `max_tokens`. ITL is drawn once per gap between tokens.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    time_to_first_token: Distribution = Fixed(value=0.0)
    inter_token_latency: Distribution = Fixed(value=0.0)
    output_tokens: Distribution = Fixed(value=16)


class ServedModel(BaseModel):
    """One more model the mock serves beside `MockConfig.model_name`, with its own latency model
    (a traffic mix across models or adapters then shows figures that differ by model)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    latency: LatencyModel


def spread_models(names: tuple[str, ...], latency: LatencyModel) -> tuple[ServedModel, ...]:
    """`names` served each with a latency of its own: the n-th (from 0) takes `latency`'s time to
    first token times 1 + n/2 and its inter-token latency times 1 + n/4, so a mix's per-model
    figures differ in a known order. Every bound of a distribution is scaled alike.

    >>> base = LatencyModel(time_to_first_token=Fixed(value=0.04),
    ...                     inter_token_latency=Fixed(value=0.008))
    >>> [(m.name, m.latency.time_to_first_token) for m in spread_models(("a", "b"), base)]
    [('a', Fixed(kind='fixed', value=0.04)), ('b', Fixed(kind='fixed', value=0.06))]
    """
    return tuple(
        ServedModel(
            name=name,
            latency=latency.model_copy(
                update={
                    "time_to_first_token": _scaled(latency.time_to_first_token, 1 + n / 2),
                    "inter_token_latency": _scaled(latency.inter_token_latency, 1 + n / 4),
                }
            ),
        )
        for n, name in enumerate(names)
    )


def _scaled(distribution: Distribution, factor: float) -> Distribution:
    match distribution:
        case Fixed(value=value):
            return Fixed(value=value * factor)
        case Normal(mean=mean, stdev=stdev, min=low, max=high):
            top = None if high is None else high * factor
            return Normal(mean=mean * factor, stdev=stdev * factor, min=low * factor, max=top)
        case Uniform(low=low, high=high):
            return Uniform(low=low * factor, high=high * factor)


class MockConfig(BaseModel):
    """Everything the mock server needs to know; frozen so it crosses process boundaries as data.

    `fault_rates` maps fault names of `FAULTS` to the probability of injecting each per request
    (sum at most 1); `fault_after_tokens` is where rate-chosen mid-stream faults strike.

    >>> MockConfig(fault_rates={"empty_stream": 0.05}).model_name
    'assay-mock'
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    latency: LatencyModel = LatencyModel()
    fault_rates: dict[str, float] = {}
    fault_after_tokens: int = Field(default=2, ge=0)
    seed: int = 0
    embedding_dimension: int = Field(default=384, ge=1)
    model_name: str = "assay-mock"
    # More models served beside `model_name`, each with its own latency; /v1/models lists them
    # all, and a request naming one is answered with that model's latency (an entry named
    # `model_name` gives it that latency; any other name is answered with `latency`).
    models: tuple[ServedModel, ...] = ()
    # /metrics reports its counters times this (1 = truthfully); tests of a client's
    # cross-check make the mock misreport with it.
    metrics_scale: float = Field(default=1.0, ge=0, allow_inf_nan=False)
    # A JSONL file that receives every request as it arrives (path, request id, body): the
    # bytes on the wire, for checking what a client really sent.
    record_requests: Path | None = None
    # The context window /v1/models lists as `max_model_len`, as vLLM and SGLang do; none when
    # unset (the mock itself refuses no request for its length).
    max_model_len: int | None = Field(default=None, gt=0)
    # A simulated GPU beside the server: /metrics then carries the NVIDIA DCGM exporter's power
    # gauge and energy counter of one GPU drawing this many watts at all times (`gpu_lines`).
    gpu_watts: float | None = Field(default=None, gt=0, le=100_000, allow_inf_nan=False)
    # A finite server (slots, a token budget, faults past a load): see `assay.mock.capacity`.
    server: ServerModel = ServerModel()

    @property
    def served_names(self) -> tuple[str, ...]:
        """Every model the mock serves, its own `model_name` first, each once.

        >>> MockConfig(models=spread_models(("a",), LatencyModel())).served_names
        ('assay-mock', 'a')
        """
        return tuple(dict.fromkeys([self.model_name, *(model.name for model in self.models)]))

    def model_list(self, created: int) -> dict[str, Any]:
        """The `/v1/models` body listing every model served, as vLLM lists its model and
        adapters (each with the context window, when set).

        >>> config = MockConfig(models=spread_models(("lora-a",), LatencyModel()))
        >>> [model["id"] for model in config.model_list(0)["data"]]
        ['assay-mock', 'lora-a']
        >>> MockConfig(max_model_len=4096).model_list(0)["data"][0]["max_model_len"]
        4096
        """
        listed = []
        for name in self.served_names:
            model: dict[str, Any] = {
                "id": name,
                "object": "model",
                "created": created,
                "owned_by": "assay",
                "root": name,
                "parent": None,
            }
            if self.max_model_len is not None:
                model["max_model_len"] = self.max_model_len
            listed.append(model)
        return {"object": "list", "data": listed}

    @model_validator(mode="after")
    def _served_models_are_distinct(self) -> Self:
        names = [model.name for model in self.models]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ValueError(f"served model(s) {repeated} named more than once")
        return self

    @model_validator(mode="after")
    def _fault_rates_are_known_probabilities(self) -> Self:
        unknown = sorted(set(self.fault_rates) - set(FAULTS))
        if unknown:
            raise ValueError(f"unknown fault(s) {unknown}; known: {sorted(FAULTS)}")
        if any(not 0 <= rate <= 1 for rate in self.fault_rates.values()):
            raise ValueError(f"fault rates must be within [0, 1], got {self.fault_rates}")
        if sum(self.fault_rates.values()) > 1 + 1e-9:
            raise ValueError(f"fault rates sum to more than 1: {sum(self.fault_rates.values())}")
        return self


__all__ = [
    "Distribution",
    "Fixed",
    "LatencyModel",
    "MockConfig",
    "ServedModel",
    "Normal",
    "Uniform",
    "is_zero",
    "sample",
    "spread_models",
]
