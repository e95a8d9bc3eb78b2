"""report.html: one self-contained page with the verdict, the tables and the charts of a run.

The page is built from report.json (and, for the latency CDFs, records.jsonl) alone, so any
stored run can be rendered again (`assay report RUN_DIR`). plotly.js (its basic bundle, shipped
with assay) is inlined: the file works offline, from a CI artifact viewer as from a laptop.
"""

from __future__ import annotations

import functools
import gzip
import html
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Final

import orjson
from pydantic import JsonValue

from assay.file_writes import replace_with, write_new
from assay.reports.capacity_chart import capacity_sections
from assay.reports.chart_base import Figure, clear_of_modebar, step_label
from assay.reports.charts import figures_of
from assay.reports.client_bound import client_bound_html
from assay.reports.cost import cost_html, price_of
from assay.reports.definitions import definitions_html, with_found
from assay.reports.inputs import inputs_html
from assay.reports.loader import load_report
from assay.reports.models_html import models_html
from assay.reports.readback import read_back
from assay.reports.readback import read_latency_samples as read_latency_samples
from assay.reports.report import INTERRUPTED_REASON, Report, StepReport
from assay.reports.shown import config_shown, header_cards, produces_tokens
from assay.reports.step_words import peak_output_text
from assay.reports.token_charts import has_token_figures
from assay.run_folder import HTML_FILE, RECORDS_FILE

_STYLE: Final = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0;
       color: #1f2328; background: #f6f8fa; }
header { padding: 20px 32px; background: #fff; border-bottom: 1px solid #d0d7de; }
main { padding: 8px 32px 32px; }
h1 { margin: 0 0 6px; font-size: 22px; }
h2 { margin: 28px 0 10px; font-size: 18px; }
.verdict { display: inline-block; padding: 4px 10px; border-radius: 6px; font-weight: 600;
           color: #fff; }
.valid { background: #2e7d32; } .invalid { background: #c62828; }
.muted { color: #57606a; font-size: 13px; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; margin-top: 14px; }
.card { background: #f6f8fa; border: 1px solid #d0d7de; border-radius: 8px; padding: 8px 14px;
        min-width: 130px; }
.card b { display: block; font-size: 20px; }
table { border-collapse: collapse; background: #fff; font-size: 13px; margin: 6px 0 14px; }
th, td { border: 1px solid #d0d7de; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f0f3f6; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(480px, 1fr)); gap: 14px; }
.chart { background: #fff; border: 1px solid #d0d7de; border-radius: 8px; padding: 6px; }
.caption { margin: 2px 8px 6px; }
details { margin: 8px 0; }
code { font-size: 12px; }
"""


PLOTLY_BUNDLE: Final = "plotly-basic.min.js.gz"


@functools.cache
def plotly_js() -> str:
    """plotly.js, its basic bundle (scatter, bar and pie traces: every chart of the reports),
    shipped gzip-compressed in `assay/reports/vendor/`.

    A quarter of the full bundle's size: the page loads in a fraction of the time and stays
    self-contained (see vendor/README.md for where it comes from).
    """
    bundle = resources.files("assay.reports") / "vendor" / PLOTLY_BUNDLE
    return gzip.decompress(bundle.read_bytes()).decode("utf-8")


def render_html(report: Report, samples: Mapping[str, Mapping[int, Sequence[float]]]) -> str:
    """The whole page for `report`; `samples` as `read_latency_samples` returns them."""
    labels = {step.index: step_label(step) for step in report.steps}
    by_label = {
        metric: {labels[step]: values for step, values in per_step.items() if step in labels}
        for metric, per_step in samples.items()
    }
    sections = [*capacity_sections(report), *figures_of(report, by_label)]
    figures = [figure for _, group in sections for figure in group]
    body = [
        _header(report),
        "<main>",
        _errors_table(report),
        _server_table(report),
        _sessions_table(report),
        *filter(None, (inputs_html(report), client_bound_html(report), definitions_html(report))),
        *filter(None, (cost_html(report, price_of(report)), models_html(report))),
        *(_section(title, group) for title, group in sections),
        _steps_table(report),
        *_token_figures_table(report),
        _config_tables(report),
        "</main>",
    ]
    specs = script_json(
        [{"id": f.id, "data": f.data, "layout": clear_of_modebar(f.layout)} for f in figures]
    )
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>assay report: {_e(_verdict_word(report))}</title>",
            f"<style>{_STYLE}</style>",
            f"<script>{plotly_js()}</script>",
            "</head><body>",
            *body,
            "<script>",
            f"const ASSAY_FIGURES = {specs};",
            "for (const f of ASSAY_FIGURES) {",
            "  Plotly.newPlot(f.id, f.data, f.layout,",
            "    {responsive: true, displaylogo: false});",
            "}",
            "</script>",
            "</body></html>",
        ]
    )


# Inside a <script> element the HTML parser, not JSON, decides where the script ends: "</script"
# ends it, and "<!--<script" makes it look for two closing tags. `&` and `>` are escaped too (so
# the text means the same in any context), and U+2028/2029, which older JavaScript forbids in a
# string literal. JSON's `\uXXXX` keeps every one of them the same character for the reader.
_SCRIPT_ESCAPES: Final = {
    ord("<"): "\\u003c",
    ord(">"): "\\u003e",
    ord("&"): "\\u0026",
    0x2028: "\\u2028",
    0x2029: "\\u2029",
}


def script_json(value: object) -> str:
    """`value` as JSON that can be inlined in a `<script>` element whatever its strings hold.

    >>> script_json({"label": "</script><!--<script>&\u2028"})
    '{"label":"\\\\u003c/script\\\\u003e\\\\u003c!--\\\\u003cscript\\\\u003e\\\\u0026\\\\u2028"}'
    """
    return orjson.dumps(value).decode().translate(_SCRIPT_ESCAPES)


def write_html(
    run_dir: Path,
    report: Report | None = None,
    *,
    new: bool = False,
    samples: Mapping[str, Mapping[int, Sequence[float]]] | None = None,
) -> Path:
    """Write `run_dir/report.html` from the run's report.json (or `report`) and records.jsonl.

    `samples` are the latency samples when the caller read them already (`read_back`); else
    they, and the peers' figures when `report` has none, are read in one pass. With `new` (a
    run writing its own folder) the page is created exclusively, never over a file already
    there; without it (`assay report`) it replaces the page in one step. Either way no other
    file is written (see `assay.file_writes`)."""
    if report is None:
        report = load_report(run_dir)
    records = run_dir / RECORDS_FILE
    unread = all(step.definitions is None for step in report.steps)
    if records.is_file() and (samples is None or unread):
        found = read_back(records, report if unread else None, samples=samples is None)
        samples = found.samples if samples is None else samples
        report = with_found(report, found.definitions)
    target = run_dir / HTML_FILE
    page = render_html(report, {} if samples is None else samples)
    if new:
        write_new(target, page)
    else:
        replace_with(target, page)
    return target


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _verdict_word(report: Report) -> str:
    if report.incomplete is not None:
        return report.incomplete.state.upper()  # CRASHED, UNFINISHED: never a verdict
    if report.run_config.interrupted:
        # Never a verdict either, also in a report written when one said VALID (interrupted).
        return "INTERRUPTED"
    return "VALID" if report.validity.valid else "INVALID"


def _incomplete_banner(report: Report) -> str:
    """What a report built after a crash or a kill holds, above everything else; "" otherwise."""
    incomplete = report.incomplete
    if incomplete is None:
        return ""
    what: str
    match incomplete.state:
        case "crashed":
            what = "assay crashed during this run"
            if incomplete.crash_file is not None:
                what += f" (its traceback is in {incomplete.crash_file})"
        case "unfinished":
            what = (
                "this run ended without writing its report (it was killed, or the machine stopped)"
            )
    merged = f" from {incomplete.shards_merged} shard file(s)" if incomplete.shards_merged else ""
    dropped = (
        f"; {incomplete.lines_dropped} line(s) cut off mid-record were dropped"
        if incomplete.lines_dropped
        else ""
    )
    settings = (
        ""
        if incomplete.settings_known
        else " The run's settings were not kept: the configuration below is empty."
    )
    state = _e(incomplete.state.upper())
    return (
        '<p class="banner" style="background:#fff;border:2px solid #c62828;'
        f'border-radius:6px;padding:8px 12px"><b>{state} RUN.</b> {_e(what)}. This partial '
        f"report was built afterwards from the records it had written{_e(merged)}{_e(dropped)}: "
        "its figures cover only the part that ran, and it has no verdict."
        f"{_e(settings)}</p>"
    )


def _header(report: Report) -> str:
    totals = report.totals
    outcomes = totals.outcomes
    valid = report.validity.valid and not report.run_config.interrupted
    said = report.validity.reasons
    if report.run_config.interrupted and INTERRUPTED_REASON not in said:
        said = (INTERRUPTED_REASON, *said)  # a report written before the verdict said so
    reasons = "".join(f"<li>{_e(reason)}</li>" for reason in said)
    reasons += "".join(f"<li>note: {_e(note)}</li>" for note in report.validity.notes)
    duration = sum(step.metrics.throughput.duration_s for step in report.steps)
    usable = sum(step.metrics.throughput.usable_requests_per_s for step in report.steps)
    echo = report.run_config
    target = echo.resolved_target or echo.target
    model = echo.resolved_model or echo.model
    cards = [
        ("dispatched", f"{outcomes.dispatched:,}"),
        ("completed", f"{outcomes.completed:,}"),
        ("errored", f"{outcomes.errored:,}"),
        ("cancelled", f"{outcomes.cancelled:,}"),
        ("error rate", f"{totals.error_rate * 100:.2f} %"),
        ("usable output tokens", f"{totals.usable_output_tokens:,}"),
        ("measured seconds", f"{duration:.2f}"),
    ]
    if len(report.steps) == 1:
        cards.append(("usable req/s", f"{usable:.2f}"))
    cards = header_cards(report, cards)
    card_html = "".join(
        f'<div class="card"><span class="muted">{_e(name)}</span><b>{_e(value)}</b></div>'
        for name, value in cards
    )
    return (
        "<header>"
        f"<h1>assay report "
        f'<span class="verdict {"valid" if valid else "invalid"}">'
        f"{_e(_verdict_word(report))} RUN</span></h1>"
        f'<div class="muted">target {_e(target)} · model {_e(model)} · '
        f"endpoint {_e(echo.endpoint)} · "
        f"{len(report.steps)} step(s) · started {_e(report.started_at.isoformat())} · "
        f"assay {_e(report.environment.assay_version)}</div>"
        + _incomplete_banner(report)
        + (f"<ul>{reasons}</ul>" if reasons else "")
        + f'<div class="cards">{card_html}</div>'
        + _latency_cards(report)
        + "</header>"
    )


# The latency headline of a one-step run: (card name, metric, percentile field).
_LATENCY_CARDS: Final = (
    ("TTFT p50", "ttft_ms", "p50"),
    ("TTFT p99", "ttft_ms", "p99"),
    ("ITL p50", "itl_ms", "p50"),
    ("TPOT p50", "tpot_ms", "p50"),
    ("E2E p50", "e2e_ms", "p50"),
    ("E2E p99", "e2e_ms", "p99"),
)


def _latency_cards(report: Report) -> str:
    """Latency headline cards of a one-step run (a run of several steps has them per step in
    the steps table); the metrics the run did not measure are left out."""
    if len(report.steps) != 1:
        return ""
    latency = report.steps[0].metrics.latency
    cards = []
    for name, metric, field in _LATENCY_CARDS:
        distribution = getattr(latency, metric)
        if distribution is None or distribution.count == 0:
            continue
        value = float(getattr(distribution, field))
        cards.append(
            f'<div class="card latency"><span class="muted">{_e(name)}</span>'
            f"<b>{_e(_ms(value))}</b></div>"
        )
    return f'<div class="cards">{"".join(cards)}</div>' if cards else ""


def _ms(value: float) -> str:
    """Milliseconds to three significant digits: "1.84 ms", "43.3 ms", "1,204 ms"."""
    if value >= 100:
        return f"{value:,.0f} ms"
    return f"{value:.3g} ms"


def _errors_table(report: Report) -> str:
    rows: list[str] = []
    for step in report.steps:
        for code, summary in sorted(
            step.metrics.errors_by_code.items(), key=lambda item: -item[1].count
        ):
            rows.append(
                f"<tr><td>{_e(step_label(step))}</td><td><code>{_e(code)}</code></td>"
                f'<td class="num">{summary.count:,}</td><td>{_e(summary.example)}</td></tr>'
            )
    if not rows:
        return "<h2>Errors by diagnostic code</h2><p>No request errored.</p>"
    return (
        "<h2>Errors by diagnostic code</h2>"
        "<table><tr><th>step</th><th>code</th><th>count</th><th>example message</th></tr>"
        + "".join(rows)
        + "</table>"
    )


def _server_table(report: Report) -> str:
    section = report.server_metrics
    if section is None:
        return ""
    rows = "".join(
        f'<tr><td>{_e(check.quantity)}</td><td class="num">{check.server:,.0f}</td>'
        f'<td class="num">{check.assay:,}</td>'
        f'<td class="num">{check.allowed_low:,.0f} to {check.allowed_high:,.0f}</td>'
        f'<td><span class="verdict {"valid" if check.agrees else "invalid"}">'
        f"{check.verdict}</span></td>"
        f"<td>{_e(check.message)}</td></tr>"
        for check in section.checks
    )
    kind = section.kind.value if section.kind is not None else "unknown kind"
    notes = "".join(f"<li>{_e(problem)}</li>" for problem in section.problems)
    cause = (
        ""
        if section.likely_cause is None
        else f'<p><span class="verdict invalid">likely cause</span> {_e(section.likely_cause)}</p>'
    )
    return (
        "<h2>Server metrics cross-check</h2>"
        f'<p class="muted">{_e(kind)} metrics from {_e(section.url)}, {section.scrapes} '
        f"scrapes every {section.interval_s:g} s; run totals from the scrapes just before and "
        "just after the load.</p>"
        + (
            "<table><tr><th>quantity</th><th>server</th><th>assay</th><th>allowed</th>"
            f"<th>verdict</th><th>why</th></tr>{rows}</table>"
            if rows
            else "<p>The server exposes no request or token counter to check against.</p>"
        )
        + cause
        + (f"<ul>{notes}</ul>" if notes else "")
    )


def _sessions_table(report: Report) -> str:
    """The sessions of a multi-turn run, per step, and each turn's outcomes; empty otherwise."""
    steps = [step for step in report.steps if step.sessions is not None]
    if not steps:
        return ""
    rows: list[str] = []
    for step in steps:
        assert step.sessions is not None  # filtered above
        cells = step.sessions.model_dump().values()  # in field order, as the header names them
        turns = "; ".join(
            f"turn {turn}: {m.outcomes.completed:,} of {m.outcomes.dispatched:,} completed"
            for turn, m in (step.turns or {}).items()
        )
        rows.append(
            f"<tr><td>{_e(step_label(step))}</td>"
            + "".join(f'<td class="num">{value:,}</td>' for value in cells)
            + f"<td>{_e(turns)}</td></tr>"
        )
    return (
        "<h2>Sessions</h2>"
        '<p class="muted">A turn not sent follows an errored or cancelled turn of its session, '
        "or the step's end.</p>"
        "<table><tr><th>step</th><th>sessions started</th><th>completed every turn</th>"
        "<th>ended early</th><th>turns sent</th><th>turns not sent</th><th>by turn</th></tr>"
        + "".join(rows)
        + "</table>"
    )


def _section(title: str, figures: Iterable[Figure]) -> str:
    charts = "".join(
        f'<div class="chart"><div id="{_e(f.id)}" class="plot"></div>'
        + (f'<div class="caption muted">{_e(f.caption)}</div>' if f.caption else "")
        + "</div>"
        for f in figures
    )
    return f'<h2>{_e(title)}</h2><div class="grid">{charts}</div>'


def _fmt(value: float | None, digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:,.{digits}f}"


def _steps_table(report: Report) -> str:
    head = (
        "<tr><th>step</th><th>stopped by</th><th>seconds</th><th>dispatched</th>"
        "<th>completed</th><th>errored</th><th>cancelled</th><th>usable req/s</th>"
        "<th>attempted req/s</th><th>usable tok/s</th><th>TTFT p50 / p99 ms</th>"
        "<th>ITL p50 / p99 ms</th><th>E2E p50 / p99 ms</th><th>goodput req/s</th></tr>"
    )
    # A step of a crashed or killed run that no limit stopped ends where its records end.
    ended = "end of schedule" if report.incomplete is None else f"{report.incomplete.state} run"
    rows = "".join(_step_row(step, ended) for step in report.steps)
    return f"<h2>Steps</h2><table>{head}{rows}</table>"


def _step_row(step: StepReport, ended: str = "end of schedule") -> str:
    m = step.metrics
    latency = m.latency

    def pair(name: str) -> str:
        dist = getattr(latency, name)
        return "n/a" if dist is None else f"{dist.p50:,.1f} / {dist.p99:,.1f}"

    cells = [
        _e(step_label(step)),
        _e(step.stopped_by or ended),
        _fmt(m.throughput.duration_s),
        f"{m.outcomes.dispatched:,}",
        f"{m.outcomes.completed:,}",
        f"{m.outcomes.errored:,}",
        f"{m.outcomes.cancelled:,}",
        _fmt(m.throughput.usable_requests_per_s),
        _fmt(m.throughput.attempted_requests_per_s),
        _fmt(m.throughput.usable_output_tokens_per_s, 1),
        pair("ttft_ms"),
        pair("itl_ms"),
        pair("e2e_ms"),
        "n/a" if m.goodput is None else _fmt(m.goodput.requests_per_s),
    ]
    return (
        "<tr>"
        + "".join(
            f'<td class="num">{cell}</td>' if index > 1 else f"<td>{cell}</td>"
            for index, cell in enumerate(cells)
        )
        + "</tr>"
    )


def _config_tables(report: Report) -> str:
    # Every key as report.json holds it, the ones this version does not know included.
    written: dict[str, JsonValue] = report.run_config.model_dump(mode="json")
    # A limit the constraints hold is shown once, as in force there (`max_seconds` null beside
    # `constraints.max_seconds` 10 read as two answers to one question).
    constraints = written.get("constraints")
    in_force = set(constraints) if isinstance(constraints, dict) else set()
    config_rows = "".join(
        f"<tr><th>{_e(key)}</th><td><code>{_e(_json_text(value))}</code></td></tr>"
        for key, value in sorted(config_shown(written).items())
        if key not in in_force
    )
    environment_rows = "".join(
        f"<tr><th>{_e(key)}</th><td>{_e(value)}</td></tr>"
        for key, value in report.environment.model_dump().items()
    )
    return (
        "<h2>Run configuration and environment</h2>"
        f"<details open><summary>configuration</summary><table>{config_rows}</table></details>"
        f"<details><summary>environment</summary><table>{environment_rows}</table></details>"
    )


def _json_text(value: JsonValue) -> str:
    if isinstance(value, str):
        return value
    return orjson.dumps(value).decode()


def _token_figures_table(report: Report) -> list[str]:
    """Per step, the figures peers print beside output throughput (nothing for reports written
    before assay measured them)."""
    if not has_token_figures(report) or not produces_tokens(report):
        return []
    head = (
        "<tr><th>step</th><th>input tok/s</th><th>output tok/s</th><th>total tok/s</th>"
        "<th>peak output tok/s (1 s bucket, at)</th><th>peak concurrent requests</th>"
        "<th>TTST p50 / p99 ms</th><th>per-user tok/s p50 / min</th>"
        "<th>prefill / decode mean ms</th></tr>"
    )
    rows = "".join(_token_figures_row(step) for step in report.steps)
    return [
        "<h2>Token rates, per-user speed, prefill vs decode</h2>"
        '<p class="muted">Completed requests only. Input uses the server\'s prompt counts; the '
        "peak is the fullest one-second bucket of output tokens, counted from the step's "
        "start; per-user tok/s is (output tokens - 1) / (E2E - TTFT) per streamed answer of 2+ "
        "tokens; TTST is the time from the first token to the second. Peak concurrency is the "
        "most requests in flight at one instant (every outcome).</p>"
        f"<table>{head}{rows}</table>"
    ]


def _token_figures_row(step: StepReport) -> str:
    m = step.metrics
    t, latency = m.throughput, m.latency
    ttst, per_user = latency.ttst_ms, t.per_user_output_tokens_per_s
    ttft, decode = latency.ttft_ms, latency.decode_ms
    peak = peak_output_text(t.peak_output_tokens_per_s, t.peak_output_at_s)
    cells = [
        _fmt(t.usable_input_tokens_per_s, 1),
        _fmt(t.usable_output_tokens_per_s, 1),
        _fmt(t.usable_total_tokens_per_s, 1),
        peak,
        f"{m.concurrency.max:,}",
        "n/a" if ttst is None else f"{ttst.p50:,.1f} / {ttst.p99:,.1f}",
        "n/a" if per_user is None else f"{per_user.p50:,.1f} / {per_user.min:,.1f}",
        "n/a" if ttft is None or decode is None else f"{ttft.mean:,.1f} / {decode.mean:,.1f}",
    ]
    return (
        f"<tr><td>{_e(step_label(step))}</td>"
        + "".join(f'<td class="num">{cell}</td>' for cell in cells)
        + "</tr>"
    )
