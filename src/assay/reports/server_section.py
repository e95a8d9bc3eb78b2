"""The console lines of the server-metrics cross-check: the server's counts beside assay's."""

from __future__ import annotations

from rich.console import Console

from assay.reports.report import Report


def server_metrics_lines(report: Report) -> list[str]:
    """What the server's metrics said, one line each; empty when none were scraped.

    >>> from datetime import UTC, datetime
    >>> from assay.reports.report import build_report
    >>> now = datetime(2026, 1, 1, tzinfo=UTC)
    >>> server_metrics_lines(build_report(run_config={}, steps=[], started_at=now,
    ...                                   finished_at=now, max_error_rate=0.05))
    []
    """
    section = report.server_metrics
    if section is None:
        return []
    kind = section.kind.value if section.kind is not None else "unknown kind"
    lines = [f"Server metrics ({kind}, {section.url}, {section.scrapes} scrapes):"]
    # Energy read from a DCGM exporter of its own (--gpu-metrics); alone when the server's
    # metrics were not scraped.
    gpus_only = section.kind is None and section.gpu_url == section.url
    if section.gpu_url is not None:
        lines[0] = (
            f"GPU metrics ({section.url}, {section.scrapes} scrapes; no server metrics):"
            if gpus_only
            else lines[0] + f" GPU energy from {section.gpu_url}"
        )
    for check in section.checks:
        match check.verdict:
            case "agrees":
                lines.append(f"  {check.quantity}: agrees: {check.message}")
            case "disagrees":
                lines.append(f"  {check.quantity}: WARNING: disagrees: {check.message}")
            case "cannot compare":
                lines.append(f"  {check.quantity}: cannot compare ({check.message})")
    if not section.checks and not gpus_only:
        lines.append("  nothing to cross-check (the server exposes no request or token counter)")
    if section.likely_cause is not None:
        lines.append(f"  WARNING: likely cause: {section.likely_cause}")
    lines.extend(f"  note: {problem}" for problem in section.problems)
    return lines


def render_server_metrics(report: Report, console: Console) -> None:
    """Print the cross-check (warnings in red), if the run scraped server metrics."""
    for line in server_metrics_lines(report):
        style = "bold red" if "WARNING" in line else None
        console.print(line, style=style, markup=False)
