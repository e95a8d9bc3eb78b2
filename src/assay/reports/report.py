"""The run report: config, environment, per-step metrics, totals and the validity verdict."""

from __future__ import annotations

import hashlib
import os
import platform
import socket
import sys
from collections.abc import Iterable
from datetime import datetime
from typing import Annotated, Final, Literal, TypedDict, TypeGuard, Unpack, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
    JsonValue,
    TypeAdapter,
    field_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from assay.core.diagnostics import AnyCode
from assay.load.loop_probe import ClientLoad
from assay.metrics.cost import StepCost
from assay.metrics.definitions import PeerDefinitions
from assay.metrics.step_metrics import ErrorSummary, Outcomes, StepMetrics
from assay.metrics.timeline import TimelineSnapshot
from assay.reports.capacity import CapacityReport, passing_steps
from assay.reports.validity import Validity, assess_validity
from assay.server_metrics import ServerMetricsReport
from assay.spec import load as loads
from assay.spec.constraints import StopReason
from assay.spec.load import ProfileKind, RateRamp, StepLoad
from assay.spec.parameter import StepFigure
from assay.spec.run import RunEcho
from assay.spec.validation import DEFAULT_MAX_NOT_SENT_RATE
from assay.version import __version__

SCHEMA_VERSION: Literal["assay.report/1"] = "assay.report/1"


class Environment(BaseModel):
    """Where the run happened; the hostname only as a short hash, or not at all."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    assay_version: str
    python: str
    platform: str
    cpu_count: int | None
    hostname_sha256: str | None = None


def collect_environment(*, include_hostname: bool = True) -> Environment:
    """The environment of this process; the hostname is hashed so reports can be shared.

    >>> collect_environment(include_hostname=False).hostname_sha256 is None
    True
    """
    hashed = None
    if include_hostname:
        hashed = hashlib.sha256(socket.gethostname().encode()).hexdigest()[:16]
    return Environment(
        assay_version=__version__,
        python=f"{platform.python_implementation()} {sys.version.split()[0]}",
        platform=platform_name(),
        cpu_count=os.cpu_count(),
        hostname_sha256=hashed,
    )


def platform_name() -> str:
    """`platform.platform()`'s text, on Linux without the `uname -p` process it starts for the
    processor (~8 ms of every run). There that answer is `unknown` or the machine again, and the
    text leaves both out: it is the system, release, machine and C library, read here from
    `os.uname()` and `platform.libc_ver()` (a distribution whose `uname -p` names the CPU model
    would have it added by `platform.platform()`; it is not a fact the report needs).

    >>> platform_name() == platform.platform() or platform.uname().processor not in ("", "unknown")
    True
    """
    if sys.platform != "linux":
        return platform.platform()
    named = os.uname()
    libc, version = platform.libc_ver()
    parts = (named.sysname, named.release, named.machine, "with", libc + version)
    text = "-".join(part.strip() for part in parts if part)
    for mark in ' /\\:;"()':
        text = text.replace(mark, "_" if mark == " " else "-")
    text = text.replace("unknown", "")
    while "--" in text:
        text = text.replace("--", "-")
    return text.rstrip("-")


_PROFILE_KINDS: Final[frozenset[str]] = frozenset(get_args(ProfileKind))


def _is_profile_kind(name: str) -> TypeGuard[ProfileKind]:
    return name in _PROFILE_KINDS


class _FreeFormInSchema:
    """report.schema.json keeps `run_config` a free-form object, as documented: a validator
    written against it accepts every report.json, the older ones too (the model reads them
    leniently as well; see `RunEcho`)."""

    _FREE_FORM: Final = TypeAdapter(dict[str, JsonValue])

    @classmethod
    def __get_pydantic_json_schema__(
        cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return handler(cls._FREE_FORM.core_schema)


# The name earlier reports gave the `--stop-error-rate` stop, which was easy to take for
# the `--max-error-rate` validity threshold; such reports still load, under the new name.
_LEGACY_STOP_NAMES = {"max_error_rate": StopReason.stop_error_rate.value}


class SessionSummary(BaseModel):
    """A step's multi-turn sessions: `turns_sent + turns_not_sent` is every turn the started
    sessions owed; a turn not sent follows an errored or cancelled turn of its session, or the
    step's end. Turns sent are records like any request; turns not sent have no record."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    started: int
    completed: int
    ended_early: int
    turns_sent: int
    turns_not_sent: int


def _is_none(value: object) -> bool:
    return value is None


class StepReport(BaseModel):
    """One profile step: what was asked (kind, rate or concurrency), what was achieved, the figures.

    `achieved_rate` is *dispatched* requests per second over the step's duration (the same figure
    as `metrics.throughput.attempted_requests_per_s`), not what was served. `stopped_by` names
    the constraint that ended the step early; None when its schedule or data ran out.

    Beside the outcomes of the dispatched requests (`metrics.outcomes`, where `dispatched ==
    completed + errored + cancelled`), what never became a record: `scheduled` is how many
    requests an open-loop schedule (constant, poisson) owed by the time the step stopped
    dispatching (None for closed loops, which owe no send times); `not_sent` those the client
    never dispatched, because it fell behind or lost a load process; `lost` those a lost load
    process had dispatched whose records did not survive it; `lost_processes` why each was
    lost. For an open loop, `scheduled == dispatched + not_sent + lost`.

    `ramp` is the rate curve a ramp_up step followed (its `requested_rate` is None: the rate
    moved); `burstiness` the gamma shape of its arrival gaps when one was given; `data_rows` the
    rows its data held when they ran out before the run's limits
    (`stopped_by` `data_exhausted`).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    index: int
    profile: str
    requested_rate: float | None = None
    requested_concurrency: int | None = None
    achieved_rate: float
    stopped_by: StopReason | None = None
    scheduled: int | None = None
    not_sent: int = 0
    lost: int = 0
    lost_processes: tuple[str, ...] = ()
    metrics: StepMetrics
    timeline: TimelineSnapshot | None = None
    # Written only when set, so a report from before they existed is written back as it was.
    ramp: RateRamp | None = Field(default=None, exclude_if=_is_none)
    data_rows: int | None = Field(default=None, exclude_if=_is_none)
    burstiness: float | None = Field(default=None, exclude_if=_is_none)

    @field_validator("stopped_by", mode="before")
    @classmethod
    def _legacy_stop_name(cls, value: object) -> object:
        return _LEGACY_STOP_NAMES.get(value, value) if isinstance(value, str) else value

    @property
    def profile_kind(self) -> ProfileKind | None:
        """The step's load as a `ProfileKind`, for an exhaustive `match`; None for a name no
        profile of this assay has (a report from another version).

        >>> from assay.metrics import StepAggregator
        >>> StepReport.of(0, "constant", StepAggregator().snapshot()).profile_kind
        'constant'
        """
        return self.profile if _is_profile_kind(self.profile) else None

    @property
    def load(self) -> StepLoad | None:
        """The load the step offered, as far as the report records it (not a replay's speed
        nor a poisson's seed): each parameter read from the step figure its field declares
        (`assay.spec.load.stored_load`). None when it does not record the figure that names
        it, or for a profile from another version. Read as stored, never refused.

        >>> from assay.metrics import StepAggregator
        >>> from assay.spec.load import Constant
        >>> step = StepReport.of(0, Constant(rate=5, burstiness=0.5), StepAggregator().snapshot())
        >>> step.load, step.requested_rate
        (Constant(kind='constant', rate=5.0, burstiness=0.5), 5.0)
        """
        figures: dict[StepFigure, object] = {
            "requested_rate": self.requested_rate,
            "requested_concurrency": self.requested_concurrency,
            "ramp": self.ramp,
            "burstiness": self.burstiness,
        }
        return loads.stored_load(self.profile, figures)

    sessions: SessionSummary | None = None
    # The metrics of each turn index (1 = a session's first turn) when the step ran sessions.
    turns: dict[int, StepMetrics] | None = None
    # The metrics of each model the step's requests named, by name, when the run sent several
    # (a traffic mix); left out otherwise, so a one-model report is what it was before.
    models: dict[str, StepMetrics] | None = Field(default=None, exclude_if=_is_none)
    # The same answers' latency figures under other benchmarks' definitions, read from
    # records.jsonl when report.json is written (`assay.reports.definitions`).
    definitions: PeerDefinitions | None = Field(default=None, exclude_if=_is_none)
    # What the step's work cost, per usable and per attempted unit (`assay.reports.cost`).
    cost: StepCost | None = Field(default=None, exclude_if=_is_none)
    # How busy each load process was while it measured (`assay.load.loop_probe`); empty in
    # reports written before it was kept.
    client_load: tuple[ClientLoad, ...] = Field(default=(), exclude_if=lambda loads: not loads)
    # "CLIENT-BOUND: ..." when a load process read what arrived late (`reports.client_bound`).
    client_bound: str | None = Field(default=None, exclude_if=_is_none)

    def judged_again(
        self,
        metrics: StepMetrics,
        *,
        timeline: TimelineSnapshot | None,
        turns: dict[int, StepMetrics] | None,
        models: dict[str, StepMetrics] | None = None,
    ) -> StepReport:
        """The same step, its records judged again: what it offered and what never became a
        record stay, its figures are `metrics`, `timeline`, `turns` and `models`."""
        achieved = metrics.throughput.attempted_requests_per_s
        update = {"metrics": metrics, "achieved_rate": achieved, "timeline": timeline}
        return self.model_copy(update={**update, "turns": turns, "models": models})

    @classmethod
    def of(
        cls, index: int, profile: str | StepLoad, metrics: StepMetrics, **fields: Unpack[StepFields]
    ) -> StepReport:
        """A step entry whose achieved rate is read from its metrics; `profile` is the load the
        step offered (its figures then read from it), or the name of one the caller cannot tell
        whole."""
        if not isinstance(profile, str):
            load, profile = profile, profile.kind
            fields["requested_rate"] = loads.requested_rate(load)
            fields["requested_concurrency"] = loads.requested_concurrency(load)
            fields["ramp"], fields["burstiness"] = loads.rate_ramp(load), loads.burstiness_of(load)
        achieved = metrics.throughput.attempted_requests_per_s
        return cls(index=index, profile=profile, achieved_rate=achieved, metrics=metrics, **fields)


class StepFields(TypedDict, total=False):
    """What `StepReport.of` takes beside the step's index, profile and metrics."""

    requested_rate: float | None
    requested_concurrency: int | None
    stopped_by: StopReason | None
    timeline: TimelineSnapshot | None
    scheduled: int | None
    not_sent: int
    lost: int
    lost_processes: tuple[str, ...]
    sessions: SessionSummary | None
    turns: dict[int, StepMetrics] | None
    models: dict[str, StepMetrics] | None
    ramp: RateRamp | None
    data_rows: int | None
    burstiness: float | None
    client_load: tuple[ClientLoad, ...]


def _errors_summed(
    errors: dict[AnyCode, ErrorSummary], more: dict[AnyCode, ErrorSummary]
) -> dict[AnyCode, ErrorSummary]:
    """`errors` with the counts of `more` added; each code keeps its first example."""
    for code, summary in more.items():
        known = errors.get(code)
        errors[code] = (
            summary
            if known is None
            else ErrorSummary(count=known.count + summary.count, example=known.example)
        )
    return errors


class ModelTotals(BaseModel):
    """One model's counts summed over every step of a run that sent several models; `good`
    counts its requests that met the SLO (None without one). Latency percentiles do not add
    across steps: each step's are in its `models`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    outcomes: Outcomes
    excluded: int = 0
    error_rate: float
    errors_by_code: dict[AnyCode, ErrorSummary]
    usable_output_tokens: int
    attempted_output_tokens: int
    good: int | None = None

    @classmethod
    def of(cls, metrics: Iterable[StepMetrics]) -> ModelTotals:
        """The totals of one model's figures in each step."""
        outcomes = Outcomes()
        excluded = usable = attempted = 0
        good: int | None = None
        errors: dict[AnyCode, ErrorSummary] = {}
        for m in metrics:
            outcomes = outcomes.plus(m.outcomes)
            excluded += m.excluded
            usable += m.throughput.usable_output_tokens
            attempted += m.throughput.attempted_output_tokens
            if m.goodput is not None:
                good = (good or 0) + m.goodput.good
            _errors_summed(errors, m.errors_by_code)
        return cls(
            outcomes=outcomes,
            excluded=excluded,
            error_rate=outcomes.error_rate,
            errors_by_code=dict(sorted(errors.items())),
            usable_output_tokens=usable,
            attempted_output_tokens=attempted,
            good=good,
        )


def models_totals(steps: Iterable[StepReport]) -> dict[str, ModelTotals] | None:
    """Each model's totals over `steps`, by name; None when no step sent several models."""
    by_model: dict[str, list[StepMetrics]] = {}
    for step in steps:
        for name, metrics in (step.models or {}).items():
            by_model.setdefault(name, []).append(metrics)
    if not by_model:
        return None
    return {name: ModelTotals.of(by_model[name]) for name in sorted(by_model)}


class Totals(BaseModel):
    """Counts summed over every step (`scheduled` over the open-loop steps; None if none);
    `models` per model when the run sent several (left out otherwise)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    outcomes: Outcomes
    scheduled: int | None = None
    not_sent: int = 0
    lost: int = 0
    excluded: int
    error_rate: float
    errors_by_code: dict[AnyCode, ErrorSummary]
    usable_output_tokens: int
    attempted_output_tokens: int
    models: dict[str, ModelTotals] | None = Field(default=None, exclude_if=_is_none)

    @classmethod
    def of(cls, steps: Iterable[StepReport]) -> Totals:
        """The totals of `steps`; each code keeps the example message of its first step."""
        steps = tuple(steps)
        scheduled: int | None = None
        for step in steps:
            if step.scheduled is not None:
                scheduled = (scheduled or 0) + step.scheduled
        summed = ModelTotals.of(step.metrics for step in steps)  # what the figures add up to
        return cls(
            outcomes=summed.outcomes,
            scheduled=scheduled,
            not_sent=sum(step.not_sent for step in steps),
            lost=sum(step.lost for step in steps),
            excluded=summed.excluded,
            error_rate=summed.error_rate,
            errors_by_code=summed.errors_by_code,
            usable_output_tokens=summed.usable_output_tokens,
            attempted_output_tokens=summed.attempted_output_tokens,
            models=models_totals(steps),
        )


class Incomplete(BaseModel):
    """A report built from the records a run left, because the run ended without writing its
    own: `crashed` when assay failed with an internal error (`crash_file` names where its
    traceback is, a name in the run folder or a path), `unfinished` when the run stopped with no
    word at all (killed by SIGKILL or the out-of-memory killer, the machine went down).

    `shards_merged` shard files went into records.jsonl, every whole record line of them;
    `lines_dropped` lines were not a whole record (a line cut off when its process stopped) and
    are not in it. `settings_known` is False when the folder kept no settings of the run:
    `run_config` is then empty, and each step is named by its index only.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    state: Literal["crashed", "unfinished"]
    crash_file: str | None = None
    shards_merged: int = 0
    lines_dropped: int = 0
    settings_known: bool = True

    def reason(self) -> str:
        """Why the report is partial, as the verdict gives it.

        >>> Incomplete(state="crashed", crash_file="crash-traceback.txt").reason()
        'assay crashed during the run (traceback in crash-traceback.txt)'
        """
        match self.state:
            case "crashed":
                where = "" if self.crash_file is None else f" (traceback in {self.crash_file})"
                return f"assay crashed during the run{where}"
            case "unfinished":
                return "the run ended without its report (killed, or the machine stopped)"


INTERRUPTED_REASON: Final = (
    "the run was interrupted (Ctrl-C or SIGTERM): its results are partial, covering only the "
    "part that ran"
)
"""The first reason of an interrupted run's verdict: it has none, whatever its figures say."""


class Report(BaseModel):
    """Everything a run produced, as written to report.json (schema "assay.report/1").

    `incomplete` is set only on a report built from what a run left when it crashed or was
    killed (see `Incomplete`); such a run is never valid, nor is an interrupted one
    (`run_config.interrupted`).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: Literal["assay.report/1"] = SCHEMA_VERSION
    run_config: Annotated[RunEcho, _FreeFormInSchema, Field(title="Run Config")]
    environment: Environment
    started_at: datetime
    finished_at: datetime
    steps: tuple[StepReport, ...]
    totals: Totals
    validity: Validity
    server_metrics: ServerMetricsReport | None = None
    # Written only when set, so a report from before it existed is written back as it was.
    incomplete: Incomplete | None = Field(default=None, exclude_if=_is_none)
    # What a capacity search found (`--profile capacity`).
    capacity: CapacityReport | None = Field(default=None, exclude_if=_is_none)


def build_report(
    *,
    run_config: RunEcho,
    steps: Iterable[StepReport],
    started_at: datetime,
    finished_at: datetime,
    max_error_rate: float,
    max_not_sent_rate: float = DEFAULT_MAX_NOT_SENT_RATE,
    environment: Environment | None = None,
    server_metrics: ServerMetricsReport | None = None,
    incomplete: Incomplete | None = None,
    capacity: CapacityReport | None = None,
) -> Report:
    """Assemble a report: totals over the steps and the verdict of `assess_validity` on them;
    a run that did not finish (`incomplete`) or was interrupted (`run_config.interrupted`) is
    invalid with that reason first.

    >>> from datetime import UTC, datetime
    >>> from assay.metrics import StepAggregator
    >>> step = StepReport.of(0, "synchronous", StepAggregator().snapshot())
    >>> now = datetime(2026, 1, 1, tzinfo=UTC)
    >>> report = build_report(run_config=RunEcho(), steps=[step], started_at=now,
    ...                       finished_at=now, max_error_rate=0.05)
    >>> report.validity.reasons
    ('no request completed (0 dispatched)',)
    """
    steps = tuple(steps)
    totals = Totals.of(steps)
    # A capacity search overloads on purpose: its validity is its passing steps'.
    passing = passing_steps(capacity) if capacity is not None else frozenset()
    judged = Totals.of([step for step in steps if step.index in passing]) if passing else totals
    validity = assess_validity(
        judged.outcomes,
        max_error_rate,
        scheduled=judged.scheduled,
        not_sent=judged.not_sent,
        max_not_sent_rate=max_not_sent_rate,
        lost_processes=tuple(
            f"step {step.index + 1}: {reason}" for step in steps for reason in step.lost_processes
        ),
    )
    report = Report(
        run_config=run_config,
        environment=environment if environment is not None else collect_environment(),
        started_at=started_at,
        finished_at=finished_at,
        steps=steps,
        totals=totals,
        validity=validity,
        server_metrics=server_metrics,
        incomplete=incomplete,
        capacity=capacity,
    )
    # A run that did not run to its end has no verdict: its figures cover only what ran. (Read
    # from the report: a caller may give `run_config` as the dict it validates from.)
    cut_short = (
        *(() if incomplete is None else (incomplete.reason(),)),
        *((INTERRUPTED_REASON,) if report.run_config.interrupted else ()),
    )
    if not cut_short:
        return report
    verdict = Validity(valid=False, reasons=(*cut_short, *validity.reasons), notes=validity.notes)
    return report.model_copy(update={"validity": verdict})
