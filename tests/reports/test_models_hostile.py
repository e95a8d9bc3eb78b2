"""A traffic mix's model names are text from a data file, a flag or a server (issue 39): the
console prints them as text (never markup, never a control character, never a line of their
own), report.html escapes them (its tables and its charts' labels), summary.csv quotes them,
a megabyte-long name is cut where it is shown, and a step that names thousands of models keeps
a bounded number of aggregators with a note."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import orjson
from playwright.sync_api import sync_playwright

from assay.benchmark.shard_sink import ShardSinkFactory, merged_models
from assay.cli.terminal import terminal_console
from assay.metrics.model_bound import MAX_MODELS, OTHER_MODELS
from assay.reports import Report, render_summary, write_report
from assay.reports.files import summary_csv
from assay.reports.html import render_html
from assay.reports.models import shown_name
from tests.cli.cli_harness import read_record_lines, read_report, run_assay, run_fast
from tests.reports.browser import CHROMIUM_ARGS, chromium_path
from tests.reports.test_models_report import _completed, _context, _errored, _report, _step

HOSTILE = (
    "[/]",  # a closing tag with nothing to close: rich's markup raised MarkupError
    "[bold red]VALID RUN[/bold red]",
    "\x1b[2J\x1b]0;owned\x07",
    "a\nFORGED",
    "</script><script>alert(1)</script>",
    '<a href="https://example.invalid">click</a>',
    'q"u,o\r\nte',
)


def _hostile_report(names: tuple[str, ...] = HOSTILE, steps: int = 2) -> Report:
    records = [
        (_errored if i % 3 == 0 else lambda i, m: _completed(i, 5, m))(i, names[i % len(names)])
        for i in range(10 * len(names))
    ]
    return _report(*(_step(records, index) for index in range(steps)))


def _console_text(report: Report) -> str:
    console = terminal_console(highlight=True, width=200)
    console.file = io.StringIO()
    render_summary(report, console)
    text = console.file.getvalue()
    assert isinstance(text, str)
    return text


def test_the_console_prints_hostile_names_as_text() -> None:
    text = _console_text(_hostile_report())
    assert "\x1b" not in text  # no escape sequence reaches the terminal
    assert "[/]" in text
    assert "[bold red]VALID RUN[/bold red]" in text  # shown, not obeyed
    assert "\\x1b[2J\\x1b]0;owned\\x07" in text
    assert "a\\x0aFORGED" in text
    # No name starts a line of its own: "FORGED" is always inside a row or a note.
    assert not any(line.strip().startswith("FORGED") for line in text.splitlines())
    assert "step 2, [/]: errors by code: http_status" in text


def test_compare_prints_hostile_names_as_text(tmp_path: Path) -> None:
    for name in ("one", "two"):
        write_report(_hostile_report(steps=1), tmp_path / name)
    result = run_assay("compare", tmp_path / "one", tmp_path / "two", "--html", tmp_path / "c.html")
    assert result.exit_code == 0, result.stderr
    assert "\x1b" not in result.stdout
    assert "model a\\x0aFORGED" in result.stdout
    page = (tmp_path / "c.html").read_text()
    assert "<script>alert(1)" not in page
    assert "model &lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_report_html_escapes_hostile_names_in_tables_and_charts() -> None:
    plain = render_html(_hostile_report(("lora-a", "lora-b")), {})
    page = render_html(_hostile_report(), {})
    assert page.count("<script") == plain.count("<script")
    assert "<script>alert(1)" not in page
    assert '<a href="https://example.invalid">' not in page
    assert "<td>&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;</td>" in page


def test_chromium_draws_hostile_names_in_the_charts_as_text(tmp_path: Path) -> None:
    """Plotly draws tags in a label (an <a href> became a link in the chart): the labels are
    given escaped, and it shows each name as the tables do."""
    path = tmp_path / "report.html"
    path.write_text(render_html(_hostile_report(steps=1), {}))
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium_path(), args=list(CHROMIUM_ARGS)
        )
        try:
            page = browser.new_page()
            page.goto(path.resolve().as_uri())
            page.wait_for_selector("#models-ttft svg.main-svg")
            ticks = page.locator("#models-ttft .xtick text")
            labels = [ticks.nth(i).text_content() or "" for i in range(ticks.count())]
            links = page.locator("#models-ttft a").count()
            cells = page.locator("#models table.models tbody td:first-child").all_text_contents()
        finally:
            browser.close()
    assert links == 0
    assert sorted(labels) == sorted(cells) == sorted(map(shown_name, HOSTILE))


def test_summary_csv_quotes_hostile_names_and_keeps_them_whole() -> None:
    report = _hostile_report()
    rows = list(csv.DictReader(io.StringIO(summary_csv(report))))
    assert [row["model"] for row in rows if row["step"] == "0"] == ["", *sorted(HOSTILE)]
    assert all(row["profile"] == "constant" for row in rows)


FORMULAS = ('=HYPERLINK("http://x","y")', "+cmd|' /C calc'!A0", "-2+3", "@SUM(1)", "\tx", "\ry")


def test_summary_csv_defuses_names_a_spreadsheet_would_run_as_formulas() -> None:
    rows = list(csv.DictReader(io.StringIO(summary_csv(_hostile_report((*FORMULAS, "m-1"))))))
    named = [row["model"] for row in rows if row["step"] == "0" and row["model"]]
    assert named == [*sorted("'" + name for name in FORMULAS), "m-1"]
    assert all(row["profile"] == "constant" for row in rows)
    # Numbers stay numbers; the cell with a bare CR is quoted, so the rows stay whole.
    assert [row["error_rate"] for row in rows if not row["model"]] == ["0.342857"] * 2
    assert len(rows) == 2 * (1 + len(FORMULAS) + 1)


def test_a_real_runs_summary_csv_defuses_a_data_files_formula_model_names(
    tmp_path: Path,
) -> None:
    """A data file's `model` column names each request's model; the mock answers any name."""
    names = ('=HYPERLINK("http://x","y")', "+cmd|calc", "-2+3", "@SUM(1)", "plain")
    data = tmp_path / "prompts.jsonl"
    data.write_text("".join(json.dumps({"prompt": "hi", "model": n}) + "\n" for n in names))
    ran = run_fast(tmp_path / "run", "--data", data, "--processes", "1")
    assert ran.exit_code == 0, ran.stderr
    text = (tmp_path / "run" / "summary.csv").read_text()
    rows = list(csv.DictReader(io.StringIO(text)))
    assert sorted(row["model"] for row in rows if row["model"]) == sorted(
        ["'" + n for n in names[:4]] + ["plain"]
    )
    assert '\n0,"=HYPERLINK' not in text
    assert "\n0,+cmd" not in text
    # report.json keeps each name as the server was sent it.
    models = read_report(tmp_path / "run").steps[0].models
    assert models is not None
    assert sorted(models) == sorted(names)


def test_a_megabyte_long_name_is_cut_where_it_is_shown_and_kept_whole_in_the_files(
    tmp_path: Path,
) -> None:
    name = "m" * 1_000_000
    report = _hostile_report((name, "short"), steps=1)
    text = _console_text(report)
    assert len(text) < 20_000
    assert "m" * 79 + "…" in text
    page = render_html(report, {})
    assert len(page) < len(render_html(_hostile_report(("x", "short"), steps=1), {})) + 10_000
    write_report(report, tmp_path)
    written = json.loads((tmp_path / "report.json").read_text())
    assert name in written["steps"][0]["models"]


def test_an_empty_name_is_shown_as_two_quotes() -> None:
    text = _console_text(_hostile_report(("", "b"), steps=2))
    assert '"" over the run' in text


def test_a_sink_keeps_at_most_the_bound_of_models_and_counts_the_rest_together(
    tmp_path: Path,
) -> None:
    count = MAX_MODELS + 200
    sink = ShardSinkFactory(tmp_path)(_context())
    for i in range(count):
        sink.add(_completed(i, 5, f"model-{i:05}"))
    summary = sink.close()
    assert summary.models is not None
    assert len(summary.models) == MAX_MODELS + 1
    other = summary.models[OTHER_MODELS].snapshot()
    assert other.outcomes.dispatched == 200
    assert summary.aggregator.snapshot().outcomes.dispatched == count


def test_processes_naming_different_models_merge_to_the_bound(tmp_path: Path) -> None:
    factory = ShardSinkFactory(tmp_path)
    sinks = [factory(_context(0)), factory(_context(1))]
    # Each process names MAX_MODELS models of its own, and both name "shared" 3 times.
    for p, sink in enumerate(sinks):
        for i in range(3):
            sink.add(_completed(i, 5, "shared"))
        for i in range(MAX_MODELS - 1):
            sink.add(_completed(i, 5, f"p{p}-{i:04}"))
    merged = merged_models([sink.close() for sink in sinks])
    assert merged is not None
    assert len(merged) == MAX_MODELS + 1
    assert merged["shared"].outcomes.dispatched == 6  # the most named is kept
    total = sum(metrics.outcomes.dispatched for metrics in merged.values())
    assert total == 2 * (3 + MAX_MODELS - 1)  # nothing lost: the rest is under OTHER_MODELS
    assert list(merged) == sorted(merged)


def test_a_step_past_the_bound_says_so_in_the_console_and_the_page(tmp_path: Path) -> None:
    records = [_completed(i, 5, f"model-{i:05}") for i in range(MAX_MODELS + 20)]
    sink = ShardSinkFactory(tmp_path)(_context())
    for record in records:
        sink.add(record)
    models = merged_models([sink.close()])
    step = _step(records[:1]).model_copy(update={"models": models})
    report = _report(step)
    assert f"more than {MAX_MODELS} models were named" in _console_text(report)
    assert f"more than {MAX_MODELS} models were named" in render_html(report, {})


def test_a_lost_process_shard_rebuilds_its_models_within_the_bound(tmp_path: Path) -> None:
    factory = ShardSinkFactory(tmp_path)
    sink = factory(_context(1))
    for i in range(MAX_MODELS + 5):
        sink.add(_completed(i, 5, f"model-{i:05}"))
    sink.close()
    rebuilt = factory.recover(_context(1))
    assert rebuilt.models is not None
    assert len(rebuilt.models) == MAX_MODELS + 1
    assert rebuilt.models[OTHER_MODELS].snapshot().outcomes.dispatched == 5


def test_compare_of_a_mix_and_a_run_of_one_model_says_they_sent_different_models(
    tmp_path: Path,
) -> None:
    write_report(_hostile_report(steps=1), tmp_path / "mixed")
    write_report(_report(_step([_completed(i, 5, None) for i in range(70)])), tmp_path / "one")
    for first, second in (("mixed", "one"), ("one", "mixed")):
        page = tmp_path / f"{first}.html"
        result = run_assay("compare", tmp_path / first, tmp_path / second, "--html", page)
        assert result.exit_code == 0, result.stderr
        mixed = "run 1" if first == "mixed" else "run 2"
        single = "run 2" if first == "mixed" else "run 1"
        said = f"{mixed} a traffic mix of {len(HOSTILE)} models"
        assert "note: the runs did not send the same models" in result.stdout
        assert said in result.stdout.replace("\n", " ")
        assert f"{single} one model (no mix)" in result.stdout.replace("\n", " ")
        assert ", model " not in result.stdout  # no model is compared with the whole run
        assert said in page.read_text()


def test_revalidate_of_a_run_naming_a_model_per_request_keeps_the_bound(tmp_path: Path) -> None:
    """A real run against the embedded mock, its records stamped with a model each (as a data
    file's model column could name them), judged again by `assay revalidate`."""
    run = tmp_path / "run"
    count = MAX_MODELS + 44
    ran = run_fast(run, "--max-requests", str(count), "--concurrency", "8", "--processes", "1")
    assert ran.exit_code == 0, ran.stderr
    stamped = b"".join(
        orjson.dumps({**line, "model": f"m{i:04}"}) + b"\n"
        for i, line in enumerate(read_record_lines(run))
    )
    (run / "records.jsonl").write_bytes(stamped)
    judged = run_assay("revalidate", run, "--max-error-rate", "1")
    assert judged.exit_code == 0, judged.stderr
    assert f"more than {MAX_MODELS} models were named" in judged.stdout.replace("\n", " ")
    step = read_report(run / "revalidated").steps[0]
    assert step.models is not None
    assert len(step.models) == MAX_MODELS + 1
    assert step.models[OTHER_MODELS].outcomes.dispatched == 44
    assert sum(m.outcomes.dispatched for m in step.models.values()) == count


def test_a_report_json_with_countless_models_shows_a_bounded_table(tmp_path: Path) -> None:
    """A report.json from elsewhere (or edited) may hold any number of models in a step: the
    console and the page show the first ones and say how many more the files hold."""
    count = MAX_MODELS + 1 + 150
    step = _step([_completed(i, 5, f"model-{i:05}") for i in range(count)])
    report = _report(step, _step([_completed(0, 5, "x"), _completed(1, 5, "y")], 1))
    text = _console_text(report)
    assert "150 more models are in report.json and summary.csv, not shown here" in text
    assert "model-00256" in text
    assert "model-00257 " not in text
    page = render_html(report, {})
    assert "150 more models are in report.json and summary.csv" in page
    assert 'data-model="model-00257"' not in page
    assert len(list(csv.DictReader(io.StringIO(summary_csv(report))))) == 2 + count + 2
