"""Console wording a user stumbled on (issue 38 item 17)."""

from __future__ import annotations

from assay.metrics import StepAggregator
from assay.metrics.step_metrics import Concurrency, Outcomes
from assay.reports.summary import _concurrency_words, _outcomes_line


def test_requests_outside_the_window_read_as_sent_not_as_never_sent() -> None:
    line = _outcomes_line(Outcomes(dispatched=40, completed=40), excluded=40).plain
    assert "40 dispatched" in line
    assert "40 more sent in warm-up or cool-down, not counted here" in line
    assert "outside the window" not in line


def test_a_peak_known_exactly_is_one_figure_and_a_bucketed_one_a_range() -> None:
    metrics = StepAggregator().snapshot()
    exact = metrics.model_copy(
        update={
            "concurrency": Concurrency(mean=3.0, max=64, max_upper_bound=64, resolution_ns=1000)
        }
    )
    assert _concurrency_words(exact) == "mean 3.00, peak 64"
    ranged = metrics.model_copy(
        update={
            "concurrency": Concurrency(mean=3.0, max=60, max_upper_bound=64, resolution_ns=1000)
        }
    )
    assert _concurrency_words(ranged) == "mean 3.00, peak 60 to 64 (read in 1 us buckets)"
