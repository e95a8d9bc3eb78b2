"""The suite's targets and the rows of its table, read from a results object.

A row names a figure by its path in the results (`part.key.key`), so every number in the table
is one the suite measured; a figure that is missing (a part not run, or failed) is shown as
not measured rather than guessed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Comparison = Literal["<=", ">="]


@dataclass(frozen=True, slots=True)
class Row:
    """One line of the table: a measured figure, and the target it must meet, if any."""

    part: str
    label: str
    path: str
    unit: str
    comparison: Comparison | None = None
    threshold: float | None = None

    def value(self, results: dict[str, Any]) -> float | None:
        """The figure at `path` in `results["parts"]`, or None when it was not measured.

        >>> Row("p", "x", "a.b", "ms").value({"parts": {"a": {"b": 1.5}}})
        1.5
        >>> Row("p", "x", "a.c", "ms").value({"parts": {"a": {"b": 1.5}}}) is None
        True
        """
        node: Any = results.get("parts", {})
        for key in self.path.split("."):
            if not isinstance(node, dict) or key not in node:
                return None
            node = node[key]
        return float(node) if isinstance(node, int | float) else None

    def status(self, value: float | None) -> str:
        """`met`, `missed`, `not measured`, or empty for a figure without a target.

        >>> Row("p", "x", "a", "s", "<=", 0.3).status(0.2)
        'met'
        >>> Row("p", "x", "a", "s", ">=", 0.8).status(0.5)
        'missed'
        """
        if self.comparison is None or self.threshold is None:
            return ""
        if value is None:
            return "not measured"
        ok = value <= self.threshold if self.comparison == "<=" else value >= self.threshold
        return "met" if ok else "missed"

    def target_text(self) -> str:
        """The target as the table shows it, e.g. `<= 2 ms`."""
        if self.comparison is None or self.threshold is None:
            return ""
        return f"{self.comparison} {self.threshold:,g} {self.unit}".rstrip()


def _pacing_rows(rate: int, *, p99_limit_ms: float) -> tuple[Row, ...]:
    """The pacing rows of one constant rate: achieved rate, the lag distribution, GC pauses."""
    name, key = f"constant {rate}", f"pacing.rate_{rate}"
    return (
        Row("pacing", f"{name}: achieved req/s", f"{key}.achieved_rate", "req/s"),
        Row("pacing", f"{name}: abs(achieved / requested - 1)", f"{key}.rate_error", "", "<=",
            0.01),
        Row("pacing", f"{name}: dispatch lag p50, ms", f"{key}.dispatch_lag_p50_ms", "ms"),
        Row("pacing", f"{name}: dispatch lag p90, ms", f"{key}.dispatch_lag_p90_ms", "ms"),
        Row("pacing", f"{name}: dispatch lag p99, ms", f"{key}.dispatch_lag_p99_ms", "ms", "<=",
            p99_limit_ms),
        Row("pacing", f"{name}: dispatch lag p99, median of the step's seconds, ms",
            f"{key}.dispatch_lag_p99_ms_median_second", "ms"),
        Row("pacing", f"{name}: dispatch lag max, ms", f"{key}.dispatch_lag_max_ms", "ms"),
        Row("pacing", f"{name}: collector pauses > 1 ms during the step (all generations)",
            f"{key}.gc_pauses_over_1_ms", ""),
    )  # fmt: skip


ROWS: tuple[Row, ...] = (
    Row("ceiling", "bare aiohttp loop, req/s (mean of the bare runs)",
        "ceiling.bare_requests_per_s", "req/s"),
    Row("ceiling", "mock's own ceiling (estimate), req/s", "ceiling.mock_ceiling_requests_per_s",
        "req/s"),
    Row("ceiling", "assay, default processes, usable req/s",
        "ceiling.assay_default.usable_requests_per_s", "req/s"),
    Row("ceiling", "assay, default processes / bare runs around it",
        "ceiling.assay_default.over_bare", ""),
    Row("ceiling", "assay --processes 1, usable req/s", "ceiling.assay_p1.usable_requests_per_s",
        "req/s"),
    Row("ceiling", "assay --processes 1 / bare runs around it", "ceiling.assay_p1.over_bare", ""),
    Row("ceiling", "assay --processes 2, usable req/s", "ceiling.assay_p2.usable_requests_per_s",
        "req/s"),
    Row("ceiling", "assay --processes 2 / bare runs around it", "ceiling.assay_p2.over_bare", ""),
    Row("ceiling", "client CPU per request, bare loop, µs",
        "ceiling.bare_client_cpu_us_per_request", "µs"),
    Row("ceiling", "client CPU per request, assay --processes 1 (steady state), µs",
        "ceiling.assay_p1.marginal_client_cpu_us_per_request", "µs"),
    Row("ceiling", "client CPU per request, assay --processes 2 (steady state), µs",
        "ceiling.assay_p2.marginal_client_cpu_us_per_request", "µs"),
    Row("ceiling", "client CPU per request, limit loop, µs",
        "ceiling.limit_client_cpu_us_per_request", "µs"),
    Row("ceiling", "client CPU per request, assay --processes 1 / bare loop",
        "ceiling.assay_p1_cpu_over_bare", "", "<=", 1.5),
    Row("ceiling", "client CPU per request, assay --processes 1 / limit loop",
        "ceiling.assay_p1_cpu_over_limit", "", "<=", 1.25),
    Row("ceiling", "assay best of the three, usable req/s", "ceiling.assay_best_requests_per_s",
        "req/s", ">=", 1500),
    Row("ceiling", "assay best / bare runs around it", "ceiling.assay_best_over_bare", "", ">=",
        0.8),
    Row("instructions", "instructions per request (callgrind), bare loop",
        "instructions.instructions_per_request.bare", ""),
    Row("instructions", "instructions per request (callgrind), limit loop",
        "instructions.instructions_per_request.limit", ""),
    Row("instructions", "instructions per request (callgrind), assay resolve alone",
        "instructions.instructions_per_request.resolve", ""),
    Row("instructions", "instructions per request (callgrind), assay resolve, verdict, record line",
        "instructions.instructions_per_request.execute", ""),
    Row("instructions", "instructions, assay resolve, verdict, record line / limit loop",
        "instructions.over_limit.execute", ""),
    Row("peers", "vllm bench serve, served req/s (median of the cycles)",
        "peers.vllm_requests_per_s", "req/s"),
    Row("peers", "assay, default processes, served req/s (median of the cycles)",
        "peers.assay_requests_per_s", "req/s"),
    Row("peers", "assay / vllm bench serve, same mock, alternating (median)",
        "peers.assay_over_vllm", "", ">=", 3),
    *_pacing_rows(200, p99_limit_ms=1),
    *_pacing_rows(500, p99_limit_ms=2),
    *_pacing_rows(1000, p99_limit_ms=2),
    Row("unit_costs", "SSE chunk, chat 16 tokens, ns",
        "unit_costs.chunk.chat_16_tokens_ns_per_chunk", "ns"),
    Row("unit_costs", "SSE chunk, chat 256 tokens, ns",
        "unit_costs.chunk.chat_256_tokens_ns_per_chunk", "ns"),
    Row("unit_costs", "SSE chunk, completions 256 tokens, ns",
        "unit_costs.chunk.completions_256_tokens_ns_per_chunk", "ns"),
    Row("unit_costs", "default chat chain, ns per response", "unit_costs.chain.chat_default_ns",
        "ns"),
    Row("unit_costs", "strict chat chain, ns per response", "unit_costs.chain.chat_strict_ns",
        "ns"),
    Row("unit_costs", "default embeddings chain, ns per response",
        "unit_costs.chain.embeddings_default_ns", "ns"),
    Row("unit_costs", "aggregation, ns per record",
        "unit_costs.aggregation.add_ns_per_record_best", "ns"),
    Row("unit_costs", "synthetic chat request (32 prompt tokens), ns",
        "unit_costs.request.synthetic_request_ns", "ns"),
    Row("unit_costs", "JSONL record line, ns per record", "unit_costs.request.record_line_ns",
        "ns"),
    Row("unit_costs", "synthetic completions request (32 prompt tokens), ns",
        "unit_costs.dispatch.synthetic_completions_request_ns", "ns"),
    Row("unit_costs", "judging a completed 16-token chat answer, default chain, ns",
        "unit_costs.dispatch.judge_chat_default_ns", "ns"),
    Row("unit_costs", "closed-loop turn against an instant server (build, execute, judge, "
        "record), ns per request", "unit_costs.dispatch.closed_loop_request_ns", "ns"),
    Row("unit_costs", "after the verdict (shard sink: line, aggregation, timeline), ns per record",
        "unit_costs.after.shard_sink_add_ns.best", "ns"),
    Row("unit_costs", "step snapshot after 20,000 records, ms", "unit_costs.after.snapshot_ms.best",
        "ms"),
    Row("unit_costs", "synthetic prompt, 8k tokens, ns per token",
        "unit_costs.request.prompt_ns_per_token_8k", "ns", "<=", 30),
    Row("unit_costs", "synthetic prompt, 32k tokens, ns per token",
        "unit_costs.request.prompt_ns_per_token_32k", "ns", "<=", 30),
    Row("memory", "peak RSS, small run (requests / 10), MB", "memory.small.peak_rss_mb", "MB",
        "<=", 150),
    Row("memory", "peak RSS, large run, MB", "memory.large.peak_rss_mb", "MB", "<=", 150),
    Row("memory", "peak RSS large / small", "memory.growth_ratio", "", "<=", 1.1),
    Row("overhead", "`assay --help`, best of 5, s", "overhead.help_best_s", "s", "<=", 0.3),
    Row("overhead", "10-request run, default processes, report.html included, best of 5, wall s",
        "overhead.ten_request_run.best_s", "s", "<=", 0.5),
    Row("overhead", "10-request run, median of 5, wall s", "overhead.ten_request_run.median_s",
        "s"),
    Row("overhead", "1-second run, default processes, best of 3, wall s",
        "overhead.one_second_run.best_s", "s", "<=", 2),
    Row("overhead", "1-second run, --processes 1, best of 3, wall s",
        "overhead.one_second_run_p1.best_s", "s"),
)  # fmt: skip


def evaluate(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Every row with its measured value and status, as stored in the results JSON."""
    return [
        {
            "part": row.part,
            "figure": row.label,
            "path": row.path,
            "value": row.value(results),
            "target": row.target_text(),
            "status": row.status(row.value(results)),
        }
        for row in ROWS
    ]


def format_value(value: float | None) -> str:
    """A figure as the table shows it: thousands separated, at most 3 significant decimals.

    >>> format_value(1534.27), format_value(0.0123), format_value(None)
    ('1,534.3', '0.0123', '-')
    """
    if value is None:
        return "-"
    if abs(value) >= 100:
        return f"{value:,.1f}"
    return f"{value:.3g}"


def markdown_table(results: dict[str, Any]) -> str:
    """The results as a markdown table: part, figure, measured, target, met / missed."""
    lines = ["| part | figure | measured | target | status |", "|---|---|---:|---|---|"]
    for entry in evaluate(results):
        lines.append(
            f"| {entry['part']} | {entry['figure']} | {format_value(entry['value'])} "
            f"| {entry['target']} | {entry['status']} |"
        )
    return "\n".join(lines)
