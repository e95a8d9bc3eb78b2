"""Where requests come from: the `RequestSource` protocol and the per-index seeding it relies on.

A source is deterministic by index: request `i` is the same in every process and does not depend
on which other indices were built, so each load-generating process builds only its own slice of
the index space from a pickled copy of the source.

Request fields beyond the prompt come in layers (the run's flags and config, then a data row's
own fields); a later layer wins key by key. When the fields set the output limit or `ignore_eos`
themselves, the request's own `max_output_tokens` / `ignore_eos` follow them (`asked_limits`),
so the validators judge the answer against what was really asked for on the wire.
"""

from __future__ import annotations

import _random
import random
from collections.abc import Mapping
from typing import Final, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, JsonValue

from assay.core import Endpoint, GenerationRequest
from assay.spec.model_mix import ModelMix

# `random.Random(n)` runs two Python-level methods around the C seeding: `__init__` and `seed`,
# which checks the seed's type. For an int seed both come down to the C seeding and
# `gauss_next = None`; calling those directly saves a sixth of a request's build.
_new_random: Final = random.Random.__new__
_seed_state: Final = _random.Random.seed

NO_AUDIO: Final = (
    "the transcriptions endpoint uploads synthetic audio (--audio-seconds); "
    "a data file or trace has no audio to send"
)


class RequestSettings(BaseModel):
    """What every request of a configured source (or session) shares: the endpoint and model
    (or the traffic mix each request draws its model from), how it is sent, the seed and
    tokenizer it is built with, and the fields added to its body."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    endpoint: Endpoint = Endpoint.chat
    model: str
    # Several models: request (or session) `i` names `mix.pick(seed, i)` instead of `model`.
    mix: ModelMix | None = None
    ignore_eos: bool = False
    stream: bool = True
    seed: int = 0
    tokenizer: str | None = None
    extra_body: dict[str, JsonValue] = {}

    def model_of(self, index: int) -> str:
        """The model request (or session) `index` names: the mix's pick, else `model`.

        >>> RequestSettings(model="m").model_of(3)
        'm'
        """
        mix = self.mix
        return self.model if mix is None else mix.pick(self.seed, index)

    def several_models(self) -> bool:
        """Whether its requests draw their model from a mix (see `NamesModels`)."""
        return self.mix is not None


class RequestSource(Protocol):
    """Builds request `index` on demand; picklable, so it crosses into worker processes."""

    def request(self, index: int) -> GenerationRequest:
        """The request at `index` (the same value in every process)."""
        ...

    def size(self) -> int | None:
        """How many distinct requests there are; None when the source is unbounded."""
        ...


@runtime_checkable
class NamesModels(Protocol):
    """A source that may send several models: its requests then each name one, and every
    record of the run carries its request's model."""

    def several_models(self) -> bool:
        """Whether its requests may name different models (a mix, or rows naming one)."""
        ...


def sends_several_models(source: object) -> bool:
    """Whether `source` sends a traffic mix (a data file whose rows name models included): its
    records then carry each request's model; a single-model run's records stay without.

    >>> sends_several_models(RequestSettings(model="m")), sends_several_models(object())
    (False, False)
    """
    return isinstance(source, NamesModels) and source.several_models()


def request_id(index: int) -> str:
    """The request id of index `index`, sortable as text.

    >>> request_id(42)
    'req-00000042'
    """
    if index < 0:
        raise ValueError(f"request index must be >= 0, got {index}")
    return f"req-{index:08d}"


def index_rng(seed: int, index: int) -> random.Random:
    """The random stream of one request, derived from `(seed, index)` alone.

    The pair maps one-to-one onto a non-negative integer seed (`random.Random` drops the sign of
    an integer, so the seed is zigzag-encoded first). Integers seed the same way in every
    process, unlike `hash()`, which is salted per process, and skip the SHA-512 a string seed
    costs on every request.

    >>> index_rng(7, 3).random() == index_rng(7, 3).random()
    True
    >>> index_rng(7, 3).random() == index_rng(7, 4).random()
    False
    >>> index_rng(-1, 0).random() == index_rng(0, 0).random()
    False
    """
    if index < 0:
        raise ValueError(f"request index must be >= 0, got {index}")
    # Zigzag: 0, -1, 1, -2, ... -> 0, 1, 2, 3, ...; then Cantor's pairing of (seed, index).
    key = seed << 1 if seed >= 0 else (-seed << 1) - 1
    total = key + index
    rng = _new_random(random.Random)
    _seed_state(rng, (total * (total + 1) >> 1) + index)
    # What `Random.seed` sets after seeding (no normal variate cached); typeshed omits it.
    rng.gauss_next = None  # type: ignore[attr-defined]
    return rng


def shared_rng(seed: int, purpose: str) -> random.Random:
    """A random stream shared by all indices of a source (e.g. the common prompt prefix).

    >>> shared_rng(1, "prefix").random() == shared_rng(1, "prefix").random()
    True
    """
    return random.Random(f"assay:{seed}:{purpose}")


def asked_limits(
    endpoint: Endpoint,
    fields: Mapping[str, JsonValue],
    max_output_tokens: int | None,
    ignore_eos: bool,
) -> tuple[int | None, bool]:
    """The output limit and `ignore_eos` the body really carries once `fields` are merged.

    >>> asked_limits(Endpoint.chat, {"max_tokens": 7, "ignore_eos": True}, 128, False)
    (7, True)
    >>> asked_limits(Endpoint.responses, {"max_tokens": 7}, 128, False)
    (128, False)
    """
    for key in endpoint.traits.limit_keys:
        value = fields.get(key)
        if type(value) is int:
            max_output_tokens = value
    eos = fields.get("ignore_eos")
    if isinstance(eos, bool):
        ignore_eos = eos
    return max_output_tokens, ignore_eos


__all__ = [
    "NO_AUDIO",
    "NamesModels",
    "RequestSettings",
    "RequestSource",
    "asked_limits",
    "index_rng",
    "request_id",
    "sends_several_models",
    "shared_rng",
]
