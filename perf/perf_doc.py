"""docs/performance.md, generated from the suite's latest results (perf/results/latest.json).

The page holds what a user asks: assay beside a peer client, and the targets met or missed. The
rest (every figure, the profile, the pacing distribution) stays in the results JSON, and
perf/README.md says how to read it. The notes between the `notes` markers are carried over from
the existing page, so what a person wrote survives a re-run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from perf.targets import evaluate, format_value

DOC_PATH = Path(__file__).resolve().parent.parent / "docs" / "performance.md"
# The figures of `python -m perf.rust_peer --write-doc`, the page's first table.
RUST_PEER_PATH = Path(__file__).resolve().parent / "results" / "rust_peer.json"
NOTES_BEGIN = "<!-- notes: kept when the doc is regenerated -->"
NOTES_END = "<!-- end of notes -->"


def existing_notes(path: Path) -> str:
    """The hand-written notes of the current doc, or a placeholder."""
    if path.exists():
        text = path.read_text()
        begin, end = text.find(NOTES_BEGIN), text.find(NOTES_END)
        if 0 <= begin < end:
            return text[begin + len(NOTES_BEGIN) : end].strip("\n")
    return "(no notes yet)"


def _machine_line(results: dict[str, Any]) -> str:
    machine = results.get("machine", {})
    return (
        f"{machine.get('logical_cores')} logical cores ({machine.get('physical_cores')} "
        f"physical, {machine.get('cpu_model')}), {machine.get('memory_gb')} GiB, "
        f"{machine.get('python')}, {machine.get('os')}; run {results.get('started_at')}."
    )


def _side_by_side_lines(results: dict[str, Any]) -> list[str]:
    peers = results.get("parts", {}).get("peers", {})
    if "assay_over_vllm" not in peers:
        return ["(the peers part was not run)"]
    assay, vllm = peers["assay_runs"], peers["vllm_runs"]
    lines = [
        f"assay (default processes) and `vllm bench serve` against one `assay mock --workers 1`, "
        f"alternating, {len(assay)} cycles: streamed chat, {peers['prompt_tokens']}-token "
        f"prompts, {peers['output_tokens']} output tokens, {peers['concurrency']} requests at "
        "once, every request completed by both.",
        "",
        "| client | served req/s per cycle | client CPU µs per request |",
        "|---|---|---|",
    ]
    for name, runs in (("assay", assay), ("`vllm bench serve`", vllm)):
        rates = " / ".join(format_value(run["requests_per_s"]) for run in runs)
        cpu = [run["marginal_cpu_us_per_request"] for run in runs]
        lines.append(f"| {name} | {rates} | {min(cpu):g}-{max(cpu):g} |")
    lines += [
        "",
        f"assay / `vllm bench serve`, median of the cycles: **{peers['assay_over_vllm']}**.",
    ]
    return lines


def _targets_table(results: dict[str, Any]) -> str:
    lines = ["| figure | measured | target | status |", "|---|---:|---|---|"]
    lines += [
        f"| {entry['figure']} | {format_value(entry['value'])} | {entry['target']} "
        f"| {entry['status']} |"
        for entry in evaluate(results)
        if entry["target"]
    ]
    return "\n".join(lines)


def rust_peer_table(figures: dict[str, Any]) -> str:
    """The table of `perf.rust_peer`'s figures the page leads with."""
    names = {
        "vllm_rs": "vLLM's Rust client (`vllm-rs bench serve`)",
        "bare_aiohttp_loop": "bare aiohttp loop (uvloop)",
        "assay_default": "**assay, default processes**",
        "assay_processes_1": "**assay `--processes 1`**",
        "assay_free_transport": "assay `--processes 1`, a transport that sends nothing",
    }
    lines = ["| client | served req/s | client CPU µs per request |", "|---|---|---|"]
    for name, label in names.items():
        figure = figures["summary"][name]
        lines.append(
            f"| {label} | {_span(figure['requests_per_s'], ',.0f')} "
            f"| {_span(figure['cpu_us_per_request'], '.0f')} |"
        )
    return "\n".join(lines)


def _span(values: list[float | None], spec: str) -> str:
    known = [value for value in values if value is not None]
    if not known:
        return "n/a"
    low, high = min(known), max(known)
    return format(low, spec) if low == high else f"{format(low, spec)}-{format(high, spec)}"


def _rust_peer_lines() -> list[str]:
    """The side-by-side table with vLLM's Rust client, from `python -m perf.rust_peer`."""
    if not RUST_PEER_PATH.exists():
        return []
    figures = json.loads(RUST_PEER_PATH.read_text())
    ratios = figures["ratios"]
    return [
        "## Beside vLLM's Rust client",
        "",
        f"One run of `{figures['command']}` ({figures['date']}): every client against one "
        f"`assay mock --workers 1`, {len(figures['runs'])} alternating cycles, streamed chat, "
        f"{figures['prompt_tokens']}-token prompts, {figures['output_tokens']} output tokens, "
        f"{figures['concurrency']} requests at once. CPU µs per request is the client's process "
        "CPU time over the requests it completed (the difference of a long and a short run); "
        "ranges span the cycles.",
        "",
        rust_peer_table(figures),
        "",
        f"Ratios (medians): assay default req/s / Rust client's "
        f"**{ratios['default_rate_over_rust']}** (target >= 0.95); assay `--processes 1` CPU per "
        f"request / Rust client's **{ratios['processes_1_cpu_over_rust']}** (target <= 1.5); "
        f"free transport / bare loop **{ratios['free_transport_cpu_over_bare_loop']}**. "
        f"Besides these runs the machine was busy for "
        f"{figures['other_load_cores']} of its {figures['cores']} cores on average "
        f"(load average {figures['load_average_before'][0]} at the start), which lowers the "
        "req/s figures far more than the CPU ones.",
        "",
    ]


def render(results: dict[str, Any], notes: str) -> str:
    """The whole page for `results`, with `notes` placed between the notes markers."""
    statuses = [entry["status"] for entry in evaluate(results)]
    missed, unmeasured = statuses.count("missed"), statuses.count("not measured")
    summary = f"{missed} target(s) missed" if missed else "every target measured met"
    if unmeasured:
        summary += f", {unmeasured} not measured"
    return "\n".join(
        [
            "# Performance",
            "",
            "How fast assay itself is, measured by its performance suite: the CLI driven end to",
            "end against `assay mock` (zero latency) on loopback. This page is generated from the",
            "latest results (`perf/results/latest.json`, which holds every figure);",
            "[perf/README.md](../perf/README.md) says how to run the suite and what each part",
            "measures.",
            "",
            f"Machine: {_machine_line(results)} The mock shares the cores with the client.",
            "",
            *_rust_peer_lines(),
            "## Beside a peer",
            "",
            *_side_by_side_lines(results),
            "",
            f"## Targets ({summary})",
            "",
            _targets_table(results),
            "",
            "The ceiling compares assay with a bare aiohttp loop (POST, read to EOF) and the limit",
            "loop (perf/limit_loop.py: the least work an honest count needs) on the same mock.",
            "",
            "## Notes",
            "",
            NOTES_BEGIN,
            notes,
            NOTES_END,
            "",
        ]
    )


def write_doc(results: dict[str, Any], path: Path) -> None:
    """Regenerate the doc at `path` from `results`, keeping its notes."""
    notes = existing_notes(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(results, notes))
