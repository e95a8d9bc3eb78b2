"""The words a user stumbled on (issue 38 item 17): a multi-turn stop counts sessions and the
requests they sent, revalidation names the codes, durations are rounded, the peak output rate
says where it was, a bursty run below its rate says why."""

from __future__ import annotations

from datetime import UTC, datetime
from io import StringIO

from rich.console import Console

from assay.cli.revalidate_command import recoded_phrase
from assay.metrics import StepAggregator
from assay.reports import render_summary
from assay.reports.report import Report, SessionSummary, StepReport, build_report
from assay.reports.step_words import describe_load, peak_output_text, stop_phrase
from assay.spec.constraints import StopReason
from assay.spec.load import Constant, RampUp, RateRamp
from assay.spec.run import RunEcho

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _report(step: StepReport, **config: object) -> Report:
    echo = RunEcho.model_validate(config)
    return build_report(
        run_config=echo, steps=[step], started_at=NOW, finished_at=NOW, max_error_rate=0.05
    )


def test_a_multi_turn_stop_counts_sessions_and_the_requests_they_sent() -> None:
    step = StepReport.of(
        0, "concurrent", StepAggregator().snapshot(), stopped_by=StopReason.max_requests
    ).model_copy(
        update={
            "sessions": SessionSummary(
                started=8, completed=8, ended_early=0, turns_sent=24, turns_not_sent=0
            )
        }
    )
    phrase = stop_phrase(step, _report(step, constraints={"max_requests": 8}))
    assert phrase == (
        "stopped after 8 sessions, 24 requests sent (--max-requests counts sessions with "
        "--multi-turn)"
    )
    plain = step.model_copy(update={"sessions": None})
    assert stop_phrase(plain, _report(plain, constraints={"max_requests": 8})) == (
        "stopped after 8 requests (--max-requests)"
    )


def test_revalidation_names_the_codes_an_errored_answer_moved_between() -> None:
    assert recoded_phrase(1, {("stream_without_finish_reason", "empty_content"): 1}) == (
        "1 errored under another code (1 stream_without_finish_reason -> empty_content)"
    )
    assert recoded_phrase(0, {}) == "0 errored under another code"


def test_a_ramps_duration_is_rounded() -> None:
    ramp = RampUp(ramp=RateRamp(curve="linear", start_rate=1, end_rate=10, duration_s=5.54518))
    step = StepReport.of(0, ramp, StepAggregator().snapshot())
    assert describe_load(step).endswith("req/s over 5.55 s")


def test_the_peak_output_rate_names_its_second_in_words() -> None:
    assert peak_output_text(7185, 4.0) == "7,185 at 4 s"
    assert peak_output_text(7185, 2.3456) == "7,185 at 2.35 s"
    assert peak_output_text(None, None) == "n/a"


def test_a_bursty_run_below_its_rate_says_why_on_the_console() -> None:
    metrics = StepAggregator().snapshot()
    metrics = metrics.model_copy(
        update={
            "throughput": metrics.throughput.model_copy(
                update={"attempted_requests_per_s": 7.4, "duration_s": 10.0}
            )
        }
    )
    bursty = StepReport.of(0, Constant(rate=10, burstiness=0.1), metrics)
    out = StringIO()
    render_summary(_report(bursty), Console(file=out, width=240))
    text = " ".join(out.getvalue().split())
    assert "below the asked 10 req/s by chance: --burstiness 0.1 sends in bursts" in text
    assert "varies by about ±32 %" in text
    steady = StepReport.of(0, Constant(rate=10), metrics)
    out = StringIO()
    render_summary(_report(steady), Console(file=out, width=240))
    assert "by chance" not in out.getvalue()
