"""The server-metrics observer of a run: started beside the load, summarized into the report."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from urllib.parse import urlsplit

from assay.backend import BackendSettings

# The scrapes verify TLS as the requests do: the system's CAs and the --ca-bundle, or not at all.
from assay.backend.client import _ssl_setting
from assay.backend.redaction import Redactor, request_secrets
from assay.benchmark.gpu_observation import gpu_scrapes
from assay.core.diagnostics import DiagnosticCode, Stage, stage_of
from assay.core.response import TokenSource
from assay.errors import ConfigError
from assay.reports import StepReport
from assay.server_metrics import (
    PLAIN_ACCOUNTING,
    Accounting,
    AssayCounts,
    ServerMetricsObserver,
    ServerMetricsReport,
    StepBounds,
    TimedSample,
    summarize,
)
from assay.server_metrics.summary import summarize_gpus
from assay.spec.sections import ServerMetrics
from assay.spec.target import mask_url

# Codes after which assay cannot tell whether the server finished the answer: the connection
# broke, a deadline passed, or the stream just stopped.
_UNSEEN_END = frozenset(
    {
        DiagnosticCode.truncated_stream,
        DiagnosticCode.no_terminal_response,
        DiagnosticCode.stream_interrupted,
        DiagnosticCode.timeout_first_token,
        DiagnosticCode.timeout_idle,
        DiagnosticCode.timeout_total,
    }
)


def metrics_url_of(metrics: ServerMetrics, target: str) -> tuple[str, bool] | None:
    """The metrics URL to scrape and whether the user named it; None when turned off.

    >>> metrics_url_of(ServerMetrics(), "http://127.0.0.1:8000")
    ('http://127.0.0.1:8000/metrics', False)
    >>> metrics_url_of(ServerMetrics(url="off"), "http://127.0.0.1:8000") is None
    True
    """
    if metrics.url == "off":
        return None
    if metrics.url is not None:
        return metrics.url, True
    return f"{target.rstrip('/')}/metrics", False


def _same_origin(a: str, b: str) -> bool:
    left, right = urlsplit(a), urlsplit(b)
    return (left.scheme, left.hostname, left.port) == (right.scheme, right.hostname, right.port)


@contextmanager
def observe_server(
    metrics: ServerMetrics, backend: BackendSettings, note: Callable[[str], None]
) -> Iterator[ServerMetricsObserver | None]:
    """An observer of the target's metrics, or None when off or when nothing answers there.

    The API key and headers go with the scrapes only when the metrics URL has the target's
    origin: no credential is sent to another host.
    """
    found = metrics_url_of(metrics, backend.request_root)
    if found is None:
        yield None
        return
    url, named = found
    headers: dict[str, str] = {}
    same_origin = _same_origin(url, backend.request_root)
    if same_origin:
        headers.update(backend.headers)
        authorization = backend.authorization()
        if authorization is not None and not any(
            name.lower() == "authorization" for name in headers
        ):
            headers["Authorization"] = authorization
    with ServerMetricsObserver(
        url,
        headers=headers,
        interval_s=metrics.interval,
        timeout_s=min(5.0, backend.timeouts.connect_s),
        verify_tls=_ssl_setting(backend),
        shown_url=mask_url(url),
        metrics_elsewhere=not same_origin,
        clean=Redactor(request_secrets(url, headers, backend.secret_headers)).clean,
    ) as observer:
        first = observer.scrape_first()
        if first.problem is not None:
            if named:
                raise ConfigError(f"--server-metrics: {first.problem}")
            note(f"server metrics: none at {mask_url(url)} ({first.problem})")
            yield None
            return
        note(f"server metrics: {mask_url(url)}, every {metrics.interval:g} s")
        yield observer


def assay_counts(steps: Sequence[StepReport]) -> AssayCounts:
    """What assay counted, in the terms of a server's counters (see `AssayCounts`)."""
    answered = unfinished = tokens = most = completed = documents = uncounted = outside = 0
    for step in steps:
        metrics = step.metrics
        outside += metrics.excluded
        documents += metrics.throughput.usable_documents
        uncounted += metrics.tokens.output_sources.get(TokenSource.none, 0)
        answered += metrics.outcomes.completed
        completed += metrics.outcomes.completed
        unfinished += metrics.outcomes.cancelled
        for code, summary in metrics.errors_by_code.items():
            try:
                known: DiagnosticCode | None = DiagnosticCode(str(code))
            except ValueError:
                known = None
            if known in _UNSEEN_END:
                unfinished += summary.count
            elif known is None or stage_of(known) is Stage.content:
                # A content verdict (assay's or a user's own code) judged an answer received.
                answered += summary.count
        # Like with like: every answer's tokens as the server reported them, usable or not
        # (a report of an earlier version has only the attempted figure).
        reported = metrics.tokens.reported_output_tokens
        tokens += metrics.throughput.attempted_output_tokens if reported is None else reported
        per_request = metrics.tokens.output_per_request
        if per_request is not None:
            most = max(most, int(per_request.max))
    return AssayCounts(
        answered=answered,
        unfinished=unfinished,
        output_tokens=tokens,
        max_output_tokens=most,
        completed=completed,
        documents=documents,
        uncounted=uncounted,
        outside=outside,
    )


def server_metrics_report(
    observer: ServerMetricsObserver | None,
    first: TimedSample | None,
    steps: Sequence[StepReport],
    accounting: Accounting = PLAIN_ACCOUNTING,
    gpus: ServerMetricsObserver | None = None,
) -> ServerMetricsReport | None:
    """The report section, from the observers' scrapes after a final one (the server's, then
    the DCGM exporter's of `--gpu-metrics`); None without data."""
    bounds = _step_bounds(steps)
    if observer is None or first is None:
        # The exporter scraped alone: the section holds the GPUs' energy.
        return None if gpus is None else summarize_gpus(gpu_scrapes(gpus), gpus.interval_s, bounds)
    observer.scrape_now()
    samples = observer.samples
    if not samples:
        return None
    return summarize(
        url=observer.url,
        interval_s=observer.interval_s,
        samples=samples,
        first=first,
        last=samples[-1],
        steps=bounds,
        assay=assay_counts(steps),
        problems=observer.problems,
        metrics_elsewhere=observer.metrics_elsewhere,
        accounting=accounting,
        gpus=None if gpus is None else gpu_scrapes(gpus),
    )


def _step_bounds(steps: Sequence[StepReport]) -> list[StepBounds]:
    return [
        StepBounds(
            index=step.index,
            start_ns=step.timeline.origin_ns if step.timeline is not None else start,
            end_ns=end,
        )
        for step in steps
        if (start := step.metrics.start_ns) is not None and (end := step.metrics.end_ns) is not None
    ]
