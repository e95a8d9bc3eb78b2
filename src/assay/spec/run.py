"""The run spec: every setting of one `assay run`, in sections (`RunConfig`; each part of assay
is passed the section it reads), and the echo of it that its report keeps (`RunEcho`, flat).

Settings that contradict each other are refused before anything starts, one message per
problem, naming the flags. Nothing here does I/O: the machine's limits (CPUs, open files) are
`assay.config.limits`.
"""

from __future__ import annotations

import typing
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_serializer, model_validator

from assay.spec.capacity import Capacity, slos_fit
from assay.spec.constraints import Constraints
from assay.spec.echo import EchoedConstraints, _AsWritten, echoed_fields, settings_model
from assay.spec.endpoint import Carries, Endpoint, EndpointTraits
from assay.spec.flat import FLAT_KEYS, flag_of, flattened, sectioned
from assay.spec.load import Profile, ProfileKind, Replay, Throughput, most_in_flight
from assay.spec.price import Price
from assay.spec.proxy import SeenProxy
from assay.spec.sections import (
    IMAGE_FIELDS,
    Engine,
    Mock,
    Output,
    Request,
    ServerMetrics,
    Source,
    Validation,
)
from assay.spec.target import MaskedUrl, Target, Timeouts, mask_headers, mask_url

DEFAULT_MAX_SECONDS: Final = 10.0
"""How long each step of a run runs when nothing else bounds it (no limit, data or trace)."""


class RunConfig(BaseModel):
    """Everything `assay run` needs, in sections; see `assay run --help` for each flat key.

    Built from sections (`RunConfig(target=Target(url=...), load=Constant(rate=20))`) or from
    flat keys (`RunConfig.model_validate({"profile": "constant", "rate": 20})`). Unknown keys
    are refused, and so is a setting the run would not use (it says the user expected
    something else).

    >>> RunConfig.model_validate({"profile": "constant", "rate": 20}).load
    Constant(kind='constant', rate=20.0, burstiness=None)
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    target: Target = Target()
    load: Profile = Throughput()
    engine: Engine = Engine()
    constraints: Constraints = Constraints()
    source: Source = Source()
    request: Request = Request()
    validation: Validation = Validation()
    output: Output = Output()
    mock: Mock = Mock()
    server_metrics: ServerMetrics = ServerMetrics()
    # The run's seed: synthetic prompts, arrivals, the mock, trace ids.
    seed: int = 42

    @model_validator(mode="before")
    @classmethod
    def _from_flat_keys(cls, data: Any) -> Any:
        """Flat keys into their sections, once their values are plain: a boolean where a
        number belongs (`max_requests: true` is not 1) and text with control characters or
        bytes that are not UTF-8 (a header with CR/LF, a binary value) are refused."""
        if not isinstance(data, dict):
            return data
        for key, value in data.items():
            if key in _NUMERIC_KEYS and _holds_bool(value):
                raise ValueError(f"{flag_of(key)}: expected a number, not {value!r}")
            problem = _bad_text(value) if key in FLAT_KEYS else None
            if problem is not None:
                raise ValueError(f"{flag_of(key)}: {problem}")
        return sectioned(data)

    @model_validator(mode="after")
    def _sections_agree(self) -> RunConfig:
        for rule in _RULES:
            problem = rule(self)
            if problem is not None:
                raise ValueError(problem)
        return self

    @property
    def bounded(self) -> bool:
        """Whether a constraint or a finite trace ends the run."""
        limits = self.constraints
        return (
            limits.max_seconds is not None
            or limits.max_requests is not None
            or self.source.trace is not None
        )

    def constraints_in_force(self) -> Constraints:
        """The per-step constraints; an unbounded synthetic run gets a default time limit.

        >>> RunConfig().constraints_in_force().max_seconds
        10.0
        """
        if isinstance(self.load, Capacity):
            return self.load.step_constraints(self.constraints)
        if self.bounded or self.source.data is not None:
            return self.constraints
        return self.constraints.model_copy(update={"max_seconds": DEFAULT_MAX_SECONDS})

    def load_in_force(self) -> Profile:
        """The profile as the run offers it: a capacity search's budget is `--max-seconds`."""
        load = self.load
        return load.in_force(self.constraints) if isinstance(load, Capacity) else load

    def echo(
        self,
        *,
        resolved_target: str | None,
        resolved_model: str | None,
        validator_chain: str,
        processes: int,
        interrupted: bool,
        degraded: bool,
        proxy: SeenProxy | None = None,
    ) -> RunEcho:
        """The echo of a run of this config, with what the run used in place of what the config
        left to a default: the concurrency the load kept in flight, the faults the embedded
        mock injected (none with a real target), the constraints in force (the target and model
        None when the run crashed before it resolved them).

        >>> config = RunConfig.model_validate({"target": "http://bob:pw-123@h:1"})
        >>> echo = config.echo(resolved_target="http://h:1", resolved_model="m",
        ...     validator_chain="default chat chain", processes=2, interrupted=False,
        ...     degraded=False)
        >>> echo.target, echo.concurrency, echo.constraints.max_seconds
        ('http://bob:**********@h:1', 64, 10.0)
        """
        flat = flattened(self.model_dump(mode="json"))
        defaults = RunEcho.model_fields
        return RunEcho.model_validate(
            {
                **{key: flat.get(key, defaults[key].default) for key in FLAT_KEYS},
                "concurrency": most_in_flight(self.load),
                "mock_faults": self.mock.injected_faults() if self.target.url is None else {},
                "resolved_target": None if resolved_target is None else mask_url(resolved_target),
                "resolved_model": resolved_model,
                "validator_chain": validator_chain,
                "processes": processes,
                "constraints": self.constraints_in_force().model_dump(mode="json"),
                "extra_body": echoed_fields(self.request.extra_body),
                "interrupted": interrupted,
                "degraded": degraded,
                "proxy": proxy,
            }
        )


if TYPE_CHECKING:  # typed: the settings RunEcho names; echo["key"] reads any

    class _Settings(_AsWritten):
        """Every flat key's field, derived from the sections (`settings_model`)."""

else:
    _Settings = settings_model(RunConfig)


def _setting(key: str) -> Any:
    """The field of the flat key `key`, as `settings_model` derived it."""
    return _Settings.model_fields[key]


class RunEcho(_Settings):
    """The run's settings as report.json keeps them (`run_config`): what the run used.

    Beside the settings (with `concurrency`, `mock_faults` and `processes` the effective ones):
    the target and model it resolved, the validator chain, the constraints in force, and
    whether it was interrupted or degraded; `revalidated_at` when `assay revalidate` wrote it.
    `echo["key"]` gives the JSON value under a key, for code written when this was a dict.
    """

    # The settings code reads by name, typed; every other flat key is a field all the same
    # (`settings_model`: the field of its place in the sections, in `FLAT_KEYS` order).
    target: MaskedUrl | None = _setting("target")
    endpoint: Endpoint = _setting("endpoint")
    model: str | None = _setting("model")
    headers: dict[str, str] = _setting("headers")
    secret_headers: tuple[str, ...] = _setting("secret_headers")
    profile: ProfileKind = _setting("profile")
    concurrency: int | None = _setting("concurrency")
    data: Path | None = _setting("data")
    prompt_tokens: str = _setting("prompt_tokens")
    output_tokens: str = _setting("output_tokens")
    shared_prefix_tokens: int = _setting("shared_prefix_tokens")
    tokenizer: str | None = _setting("tokenizer")
    stream: bool = _setting("stream")
    ignore_eos: bool = _setting("ignore_eos")
    seed: int = _setting("seed")
    max_error_rate: float = _setting("max_error_rate")
    max_not_sent_rate: float = _setting("max_not_sent_rate")
    slo: dict[str, float] = _setting("slo")
    mock_faults: dict[str, float] = _setting("mock_faults")
    cost_per_hour: Price | None = _setting("cost_per_hour")
    # What the run used beyond its settings.
    resolved_target: str | None = None
    resolved_model: str | None = None
    validator_chain: str | None = None
    constraints: EchoedConstraints | None = None
    interrupted: bool = False
    degraded: bool = False
    revalidated_at: str | None = None
    # A proxy seen answering at the target (left out when none, as in earlier reports).
    proxy: SeenProxy | None = Field(default=None, exclude_if=lambda proxy: proxy is None)

    @field_serializer("headers")
    def _mask_secret_headers(self, value: dict[str, str]) -> dict[str, str]:
        return mask_headers(value, self.secret_headers)

    def revalidated(self, *, validator_chain: str, at: str, max_error_rate: float) -> RunEcho:
        """The echo of the same run judged again by `assay revalidate` at `at` (ISO 8601).

        >>> again = RunEcho().revalidated(validator_chain="strict", at="2026", max_error_rate=0.1)
        >>> again.validator_chain, again.revalidated_at, again.max_error_rate
        ('strict', '2026', 0.1)
        """
        update = {
            "validator_chain": validator_chain,
            "revalidated_at": at,
            "max_error_rate": max_error_rate,
        }
        echo = self.model_copy(update=update)
        echo._kept_as_written = {
            key: value for key, value in self._kept_as_written.items() if key not in update
        }
        return echo

    def __getitem__(self, key: str) -> JsonValue:
        """The JSON value report.json holds under `key` (KeyError when it holds none)."""
        written: dict[str, JsonValue] = self.model_dump(mode="json")
        return written[key]


def _mock_needs_no_target(config: RunConfig) -> str | None:
    given = config.mock.model_fields_set
    mock = [key for key, path in FLAT_KEYS.items() if path[0] == "mock" and path[1] in given]
    if config.target.url is None or not mock:
        return None
    flags = ", ".join(map(flag_of, mock))
    return f"{flags}: only for the embedded mock, which does not run with --target"


def _replay_has_its_trace(config: RunConfig) -> str | None:
    replay = isinstance(config.load, Replay)
    if replay and config.source.trace is None:
        return "profile replay needs a trace (--trace FILE)"
    if config.source.trace is not None and not replay:
        return "--trace is replayed by --profile replay"
    return None


def _limits_bound_what_needs_them(config: RunConfig) -> str | None:
    limits = config.constraints
    if config.source.data_cycle and limits.max_seconds is None and limits.max_requests is None:
        return (
            "--data-cycle reuses the rows without end: bound the run with --max-requests "
            "or --max-seconds"
        )
    if (limits.warmup_seconds or limits.cooldown_seconds) and limits.max_seconds is None:
        return "--warmup-seconds and --cooldown-seconds need --max-seconds"
    return None


def _endpoints(has: Callable[[EndpointTraits], bool], joined: str = "and") -> str:
    """The endpoints with a trait, in words: `rerank and score`."""
    names = [endpoint.value for endpoint in Endpoint if has(endpoint.traits)]
    return f" {joined} ".join(filter(None, (", ".join(names[:-1]), names[-1])))


def _sessions_fit_the_endpoint(config: RunConfig) -> str | None:
    source, traits = config.source, config.target.endpoint.traits
    if source.sessions and (source.trace is not None or not traits.takes_conversation):
        conversing = _endpoints(lambda traits: traits.takes_conversation, "or")
        return f"multi-turn sessions need a {conversing} load"
    return None


def _request_fits_the_endpoint(config: RunConfig) -> str | None:
    endpoint, traits = config.target.endpoint, config.target.endpoint.traits
    given = {*config.source.model_fields_set, *config.request.model_fields_set}
    carried = [key for key in ("documents", "document_tokens") if key in given]
    if carried and not _carries_documents(traits):
        return (
            f"{', '.join(map(flag_of, carried))} applies to the "
            f"{_endpoints(_carries_documents)} endpoints, not {endpoint} (its requests carry "
            "no documents)"
        )
    ignored = [
        key
        for key, unused in (
            ("output_tokens", not traits.generates),
            ("ignore_eos", not traits.generates and config.request.ignore_eos),
            ("stream", not traits.streams and config.request.stream),
        )
        if unused and key in given
    ]
    if ignored:
        return (
            f"{', '.join(map(flag_of, ignored))} does not apply to the {endpoint} "
            f"endpoint ({_what_it_lacks(traits)})"
        )
    return None


def _media_fits_the_endpoint(config: RunConfig) -> str | None:
    """Images go in chat messages, audio in chat or a transcription's upload."""
    endpoint, traits, source = config.target.endpoint, config.target.endpoint.traits, config.source
    images = [key for key in IMAGE_FIELDS if key in source.media_given]
    if images and not traits.takes_images:
        return (
            f"{', '.join(map(flag_of, images))}: images go in "
            f"{_endpoints(lambda traits: traits.takes_images)} messages "
            f"(--endpoint {_endpoints(lambda traits: traits.takes_images, 'or')}), "
            f"not to the {endpoint} endpoint"
        )
    if "audio_seconds" in source.media_given and not traits.takes_audio:
        return (
            f"--audio-seconds goes to {_endpoints(lambda traits: traits.takes_audio, 'or')}, "
            f"not to the {endpoint} endpoint"
        )
    return None


def _audio_upload_is_synthetic(config: RunConfig) -> str | None:
    """An endpoint that uploads audio needs it, and only synthetic audio feeds it."""
    endpoint, source = config.target.endpoint, config.source
    if not endpoint.traits.needs_audio:
        return None
    if source.data is not None or source.trace is not None:
        return (
            f"the {endpoint} endpoint uploads synthetic audio (--audio-seconds); "
            "--data and --trace hold no audio"
        )
    if source.audio_seconds <= 0:
        return f"--endpoint {endpoint} needs --audio-seconds S (the audio it uploads)"
    given = {*source.model_fields_set, *config.request.model_fields_set}
    unused = [flag_of(key) for key in ("prompt_tokens", "shared_prefix_tokens", "ignore_eos")
              if key in given]  # fmt: skip
    if unused:
        return (
            f"{', '.join(unused)} does not apply to the {endpoint} endpoint "
            "(it sends audio, not a prompt)"
        )
    return None


def _capacity_can_decide(config: RunConfig) -> str | None:
    """A capacity search's SLOs bound figures the run produces, and its budget fits a step."""
    load, traits = config.load, config.target.endpoint.traits
    if not isinstance(load, Capacity):
        return None
    streamed = traits.streams and config.request.stream
    fit = slos_fit(load.slos, generates_text=traits.generates, streamed=streamed)
    return fit or load.problem(config.constraints)


# The rules between sections, in the order they are checked.
_RULES: Final[tuple[Callable[[RunConfig], str | None], ...]] = (
    _request_fits_the_endpoint,
    _mock_needs_no_target,
    _media_fits_the_endpoint,
    _audio_upload_is_synthetic,
    _replay_has_its_trace,
    _sessions_fit_the_endpoint,
    _limits_bound_what_needs_them,
    _capacity_can_decide,
)


def _carries_documents(traits: EndpointTraits) -> bool:
    return traits.carries is Carries.documents


def _what_it_lacks(traits: EndpointTraits) -> str:
    """Why output-token and streaming flags mean nothing to an endpoint, in words."""
    lacks = [
        words
        for words, lacking in (
            ("has no output tokens", not traits.generates),
            ("is never streamed", not traits.streams),
        )
        if lacking
    ]
    return f"{traits.answer.traits.noun} {' and '.join(lacks)}"


def _numeric(annotation: object) -> bool:
    """Whether a key takes a number: an int or a float, optional or not, or a map of them."""
    return any(kind in (int, float) for kind in typing.get_args(annotation) or (annotation,))


_NUMERIC_KEYS: Final = frozenset(
    key for key in FLAT_KEYS if _numeric(RunEcho.model_fields[key].annotation)
)


def _holds_bool(value: object) -> bool:
    if isinstance(value, dict):
        return any(isinstance(item, bool) for item in value.values())
    return isinstance(value, bool)


def _bad_text(value: object) -> str | None:
    """What is wrong with the text in `value` (a string, a path, or a map or list of them).

    The text itself is not quoted back: it may be a secret (a header's value).

    >>> _bad_text({"X-Team": "infra\\r\\nInjected: 1"})
    "'X-Team': holds the control character U+000D"
    """
    match value:
        case str() | Path():
            for char in str(value):
                category = unicodedata.category(char)
                if category == "Cs":
                    return "holds bytes that are not UTF-8 text"
                if category == "Cc" and char != "\t":
                    return f"holds the control character U+{ord(char):04X}"
            return None
        case dict():
            for key, item in value.items():
                problem = _bad_text(key) or _bad_text(item)
                if problem is not None:
                    return f"{(_bad_text(key) and 'a name') or repr(key)}: {problem}"
            return None
        case list() | tuple():
            return next(filter(None, map(_bad_text, value)), None)
        case _:
            return None


__all__ = [
    "DEFAULT_MAX_SECONDS",
    "Engine",
    "Mock",
    "Output",
    "Request",
    "RunConfig",
    "RunEcho",
    "ServerMetrics",
    "Source",
    "Target",
    "Timeouts",
    "Validation",
]
