"""One run's TTFT, TPOT, ITL and E2E under five other benchmarks' definitions, beside assay's own.

The figures come from records.jsonl (each completed streamed answer's chunk times and token
counts, read in the one pass of `assay.reports.readback`) folded by
`assay.metrics.definitions.PeerTally`, per step and inside the step's measured
window, so they count the same answers as the step's own latency figures. report.json keeps
them per step (`definitions`); the console prints the table on request (`assay report RUN
--definitions`) and report.html shows it.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from assay.metrics.definitions import Peer, PeerDefinitions, PeerFigures
from assay.metrics.sketch import Distribution
from assay.reports.readback import read_back
from assay.reports.report import Report, StepReport


@dataclass(frozen=True, slots=True)
class PeerRule:
    """How a peer defines the four figures, where it says so, and how it differs from assay."""

    name: str
    source: str
    differs: str


def rule_of(peer: Peer) -> PeerRule:
    """The words the console and the page print for `peer` (docs/report.md has the detail)."""
    match peer:
        case Peer.vllm:
            return PeerRule(
                "vLLM bench serve",
                "vllm/benchmarks/serve.py, vllm/benchmarks/lib/endpoint_request_func.py",
                "E2E and TPOT end at the last chunk, not the end of the stream; ITL is one "
                "sample per chunk, so a chunk of k tokens is one gap and chunks read together "
                "are gaps of 0",
            )
        case Peer.sglang:
            return PeerRule(
                "SGLang bench_serving",
                "python/sglang/bench_serving.py",
                "TTFT waits for a chunk with content; TPOT and E2E as assay's; ITL one sample "
                "per content chunk, as vLLM's",
            )
        case Peer.guidellm:
            return PeerRule(
                "GuideLLM",
                "src/guidellm/schemas/request_stats.py, src/guidellm/benchmark/schemas/metrics.py",
                "TPOT = (last token - send) / tokens, TTFT included; its ITL is assay's TPOT "
                "ending at the last token; both weighted by each answer's tokens",
            )
        case Peer.aiperf:
            return PeerRule(
                "AIPerf",
                "aiperf/metrics/types/{ttft,request_latency,inter_token_latency}_metric.py",
                "no TPOT; its ITL is assay's TPOT ending at the last content chunk; E2E "
                "(request latency) ends there too; it counts tokens by re-tokenizing the text",
            )
        case Peer.inference_perf:
            return PeerRule(
                "inference-perf",
                "inference_perf/reportgen/base.py",
                "every token of a chunk stamped at the chunk's arrival: ITL per token gap, 0 "
                "inside a chunk; TPOT ends at the last token; no TTFT below 2 tokens",
            )


def read_definitions(records: Path, report: Report) -> dict[int, PeerDefinitions]:
    """Per step index, the peers' figures of the step's completed streamed answers in `records`.

    A record whose targeted start falls outside its step's measured window (warm-up, cool-down)
    is left out, as the step's own figures leave it out. Raises `DataError` naming the line when
    a line is not a JSON object.
    """
    return read_back(records, report, samples=False).definitions


def with_definitions(report: Report, records: Path) -> Report:
    """`report` with each step's `definitions` read from `records` (unchanged without the file)."""
    if not records.is_file():
        return report
    return with_found(report, read_definitions(records, report))


def with_found(report: Report, found: Mapping[int, PeerDefinitions]) -> Report:
    """`report` with each step's `definitions` from `found` (a `ReadBack`'s), unchanged when
    `found` is empty."""
    if not found:
        return report
    steps = tuple(
        step.model_copy(update={"definitions": found.get(step.index)}) for step in report.steps
    )
    return report.model_copy(update={"steps": steps})


FIGURES = (("ttft_ms", "TTFT"), ("tpot_ms", "TPOT"), ("itl_ms", "ITL"), ("e2e_ms", "E2E"))
"""The figures of the table, in its order, with their headings."""


def rows_of(step: StepReport) -> list[tuple[str, PeerFigures, str]] | None:
    """The table of one step: assay's own figures first, then each peer's, with what differs;
    None when the step has no peer figures."""
    peers = step.definitions
    if peers is None:
        return None
    latency = step.metrics.latency
    own = PeerFigures(
        ttft_ms=latency.ttft_ms,
        tpot_ms=latency.tpot_ms,
        itl_ms=latency.itl_ms,
        e2e_ms=latency.e2e_ms,
    )
    rows = [("assay", own, "TTFT = first token - send; TPOT = (E2E - TTFT) / (tokens - 1)")]
    rows.extend((rule_of(peer).name, peers.of(peer), rule_of(peer).differs) for peer in Peer)
    return rows


def _cell(distribution: Distribution | None) -> tuple[str, str]:
    if distribution is None:
        return "-", "-"
    return _ms(distribution.mean), _ms(distribution.p99)


def _ms(value: float) -> str:
    return f"{value:.3g}" if value < 100 else f"{value:.0f}"


def definitions_text(report: Report) -> list[str]:
    """The console's table, a block per step with peer figures (mean and p99, ms)."""
    out: list[str] = []
    for step in report.steps:
        rows = rows_of(step)
        if rows is None:
            continue
        assert step.definitions is not None  # rows_of found them
        out.append(
            f"Definitions side by side, step {step.index} ({step.profile}, "
            f"{step.definitions.answers} streamed answers; mean / p99, ms):"
        )
        head = f"  {'':<22}" + "".join(f"{title:>18}" for _, title in FIGURES)
        out.append(head)
        for name, figures, _ in rows:
            cells = (_cell(getattr(figures, field)) for field, _ in FIGURES)
            out.append(f"  {name:<22}" + "".join(f"{m + ' / ' + p:>18}" for m, p in cells))
        out.append("  How each differs from assay's:")
        out.extend(f"    {name}: {differs}" for name, _, differs in rows[1:])
    return out


def definitions_html(report: Report) -> str:
    """report.html's section: the table per step, and the rules' sources; "" without figures."""
    parts: list[str] = []
    for step in report.steps:
        rows = rows_of(step)
        if rows is None:
            continue
        head = "".join(f"<th>{title} mean</th><th>{title} p99</th>" for _, title in FIGURES)
        body = []
        for name, figures, differs in rows:
            cells = "".join(
                f"<td>{m}</td><td>{p}</td>"
                for m, p in (_cell(getattr(figures, field)) for field, _ in FIGURES)
            )
            body.append(
                f"<tr><th>{html.escape(name)}</th>{cells}<td>{html.escape(differs)}</td></tr>"
            )
        parts.append(
            f"<h3>Step {step.index} ({html.escape(step.profile)})</h3>"
            f'<table class="definitions"><thead><tr><th>definition</th>{head}'
            "<th>how it differs from assay's</th></tr></thead>"
            f"<tbody>{''.join(body)}</tbody></table>"
        )
    if not parts:
        return ""
    sources = "".join(
        f"<li>{html.escape(rule_of(peer).name)}: <code>{html.escape(rule_of(peer).source)}</code>"
        "</li>"
        for peer in Peer
    )
    return (
        '<section id="definitions"><h2>Definitions side by side</h2>'
        "<p>The same completed streamed answers, their latency figures (ms) computed as each "
        "benchmark defines them, read from its source:</p>"
        f"{''.join(parts)}<ul>{sources}</ul></section>"
    )
