"""Per-interval counts over one step: the time series behind the report's charts.

A `Timeline` keeps a bounded number of buckets (at most `max_buckets`); when a step outlasts
them, the bucket width doubles and neighbouring buckets fold together, so memory stays bounded
whatever the step's length. Timelines of the processes of one step share an origin (the step's
start on the shared monotonic clock) and merge bucket by bucket.

Per bucket: requests dispatched (by actual send), completed, errored by code and cancelled (by
finish), output tokens of completed requests (by finish), time to first token of completed
requests (by send: mean and max), and the mean number of requests in flight.

Errors by code count every record, warm-up and cool-down included (the chart shows the whole
step), in the interval it finished in; the report's table by code is `StepAggregator`'s, which
counts the measured window only, so the series can add up to more than the table.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from assay.core import GenerationResponse
from assay.records import Cancelled, Completed, Errored, RequestRecord
from assay.spec.constraints import NS_PER_S

# A quarter second to start with and 240 buckets: a one-minute step keeps quarter seconds, and a
# longer one doubles into round widths (0.5 s up to two minutes, 1 s up to four, ...).
DEFAULT_WIDTH_NS = NS_PER_S // 4
DEFAULT_MAX_BUCKETS = 240


class TimelineSnapshot(BaseModel):
    """The time series of one step, bucket `i` covering `[i * interval_s, (i+1) * interval_s)`
    seconds after the step's start; lists are aligned by bucket.

    `ttft_ms_mean` / `ttft_ms_max` are None for buckets in which no completed request was sent.
    `concurrency_mean` is the time-averaged number of requests in flight. `origin_ns` is the
    step's start on the run's monotonic clock, so the steps of one run line up on one time axis.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    origin_ns: int
    interval_s: float
    dispatched: tuple[int, ...] = ()
    completed: tuple[int, ...] = ()
    cancelled: tuple[int, ...] = ()
    errored_by_code: dict[str, tuple[int, ...]] = {}
    output_tokens: tuple[int, ...] = ()
    ttft_ms_mean: tuple[float | None, ...] = ()
    ttft_ms_max: tuple[float | None, ...] = ()
    concurrency_mean: tuple[float, ...] = ()

    @property
    def buckets(self) -> int:
        """How many intervals the series holds."""
        return len(self.dispatched)


class Timeline:
    """Mergeable, bounded per-interval aggregates of one step.

    >>> from assay.records import Cancelled, RequestRecord
    >>> timeline = Timeline(origin_ns=0, width_ns=NS_PER_S, max_buckets=4)
    >>> for second in range(6):
    ...     start = second * NS_PER_S
    ...     timeline.add(RequestRecord(request_id=str(second), targeted_start_ns=start,
    ...                  dispatched_ns=start, finished_ns=start + 1, outcome=Cancelled()))
    >>> snapshot = timeline.snapshot()
    >>> snapshot.interval_s, snapshot.dispatched
    (2.0, (2, 2, 2))
    """

    __slots__ = (
        "_busy_ns",
        "_cancelled",
        "_completed",
        "_dispatched",
        "_errored",
        "_max_buckets",
        "_origin_ns",
        "_output_tokens",
        "_ttft_count",
        "_ttft_max_ns",
        "_ttft_sum_ns",
        "_width_ns",
    )

    def __init__(
        self,
        origin_ns: int,
        width_ns: int = DEFAULT_WIDTH_NS,
        max_buckets: int = DEFAULT_MAX_BUCKETS,
    ) -> None:
        if width_ns <= 0 or max_buckets < 2:
            raise ValueError("a timeline needs a positive width and at least two buckets")
        self._origin_ns = origin_ns
        self._width_ns = width_ns
        self._max_buckets = max_buckets
        self._dispatched: list[int] = []
        self._completed: list[int] = []
        self._cancelled: list[int] = []
        self._errored: dict[str, list[int]] = {}
        self._output_tokens: list[int] = []
        self._ttft_sum_ns: list[int] = []
        self._ttft_count: list[int] = []
        self._ttft_max_ns: list[int] = []
        self._busy_ns: list[int] = []

    @property
    def width_ns(self) -> int:
        """The current bucket width."""
        return self._width_ns

    def add(self, record: RequestRecord[GenerationResponse]) -> None:
        """Count one finished record (any outcome) into its buckets."""
        # Runs once per request: offsets, the growth check and the busy time are worked out
        # inline, and a request inside one bucket (the common case) adds its busy time at once.
        origin = self._origin_ns
        sent = record.dispatched_ns - origin
        if sent < 0:
            sent = 0
        finished = record.finished_ns - origin
        if finished < sent:
            finished = sent
        width = self._width_ns
        if finished // width >= len(self._dispatched):
            self._grow_to(finished // width)
            width = self._width_ns
        start_bucket = sent // width
        end_bucket = finished // width
        self._dispatched[start_bucket] += 1
        outcome = record.outcome
        if type(outcome) is Completed or isinstance(outcome, Completed):  # see StepAggregator.add
            self._add_completed(outcome.response, start_bucket, end_bucket)
        else:
            match outcome:
                case Errored(diagnostic=diagnostic):
                    self._errored_series(str(diagnostic.code))[end_bucket] += 1
                case Cancelled():
                    self._cancelled[end_bucket] += 1
        if start_bucket == end_bucket:
            self._busy_ns[start_bucket] += finished - sent
        else:
            self._add_busy(sent, finished)

    def _add_completed(self, response: GenerationResponse, start: int, end: int) -> None:
        self._completed[end] += 1
        self._output_tokens[end] += response.output_tokens
        timing = response.timing
        first = timing.first_token_ns
        if first is not None:
            ttft = first - timing.send_ns
            self._ttft_sum_ns[start] += ttft
            self._ttft_count[start] += 1
            if ttft > self._ttft_max_ns[start]:
                self._ttft_max_ns[start] = ttft

    def merge(self, other: Timeline) -> None:
        """Add `other` (same origin; any width of the same doubling series) into this one."""
        if other._origin_ns != self._origin_ns:
            raise ValueError("timelines of different steps do not merge")
        while self._width_ns < other._width_ns:
            self._coarsen()
        if other._dispatched:
            self._grow_to((len(other._dispatched) - 1) * other._width_ns // self._width_ns)
        factor = self._width_ns // other._width_ns
        if factor * other._width_ns != self._width_ns:
            raise ValueError("timeline widths are not multiples of each other")
        for index in range(len(other._dispatched)):
            mine = index // factor
            self._dispatched[mine] += other._dispatched[index]
            self._completed[mine] += other._completed[index]
            self._cancelled[mine] += other._cancelled[index]
            self._output_tokens[mine] += other._output_tokens[index]
            self._ttft_sum_ns[mine] += other._ttft_sum_ns[index]
            self._ttft_count[mine] += other._ttft_count[index]
            self._ttft_max_ns[mine] = max(self._ttft_max_ns[mine], other._ttft_max_ns[index])
            self._busy_ns[mine] += other._busy_ns[index]
        for code, series in other._errored.items():
            target = self._errored_series(code)
            for index, count in enumerate(series):
                target[index // factor] += count

    def snapshot(self) -> TimelineSnapshot:
        """A frozen copy of the series, in report units (seconds, milliseconds)."""
        width = self._width_ns
        means: list[float | None] = []
        maxima: list[float | None] = []
        for total, count, peak in zip(
            self._ttft_sum_ns, self._ttft_count, self._ttft_max_ns, strict=True
        ):
            means.append(total / count / 1e6 if count else None)
            maxima.append(peak / 1e6 if count else None)
        return TimelineSnapshot(
            origin_ns=self._origin_ns,
            interval_s=width / NS_PER_S,
            dispatched=tuple(self._dispatched),
            completed=tuple(self._completed),
            cancelled=tuple(self._cancelled),
            errored_by_code={code: tuple(series) for code, series in sorted(self._errored.items())},
            output_tokens=tuple(self._output_tokens),
            ttft_ms_mean=tuple(means),
            ttft_ms_max=tuple(maxima),
            concurrency_mean=tuple(busy / width for busy in self._busy_ns),
        )

    def _grow_to(self, index: int) -> None:
        """Make bucket `index` (at the current width) exist, coarsening past the bound."""
        while index >= self._max_buckets:
            self._coarsen()
            index //= 2
        missing = index + 1 - len(self._dispatched)
        if missing <= 0:
            return
        zeros = [0] * missing
        for series in self._all_series():
            series.extend(zeros)
        self._ttft_max_ns.extend(zeros)

    def _errored_series(self, code: str) -> list[int]:
        series = self._errored.get(code)
        if series is None:
            series = self._errored[code] = [0] * len(self._dispatched)
        return series

    def _all_series(self) -> list[list[int]]:
        return [
            self._dispatched,
            self._completed,
            self._cancelled,
            self._output_tokens,
            self._ttft_sum_ns,
            self._ttft_count,
            self._busy_ns,
            *self._errored.values(),
        ]

    def _coarsen(self) -> None:
        """Double the bucket width, folding each pair of buckets into one (maxima by max)."""
        self._width_ns *= 2
        for series in self._all_series():
            series[:] = [sum(series[i : i + 2]) for i in range(0, len(series), 2)]
        peaks = self._ttft_max_ns
        peaks[:] = [max(peaks[i : i + 2]) for i in range(0, len(peaks), 2)]

    def _add_busy(self, start: int, end: int) -> None:
        width = self._width_ns
        bucket = start // width
        while start < end:
            bucket_end = (bucket + 1) * width
            stop = min(end, bucket_end)
            self._busy_ns[bucket] += stop - start
            start = stop
            bucket += 1
