"""A step's load is read back from report.json's figures by what each parameter declares
(`Figure` in `assay.spec.load`), and worded by the load itself: every step kind, from the
examples its fields declare, reads back as it ran and says the words reports have always used."""

from __future__ import annotations

import typing

import pytest

from assay.metrics import StepAggregator
from assay.reports.report import StepReport
from assay.reports.step_words import describe_load, offered, step_label
from assay.spec.load import ProfileKind, load_words
from tests.load.profile_examples import STEP_KINDS, example_step_load

# The words of each kind's example step (sentence, table cell, chart label), as they were
# written by a match per kind in the reports before each profile said its own.
_WORDS = {
    "synchronous": ("synchronous, one request at a time", "sync", "1 synchronous"),
    "concurrent": ("concurrent, 4 streams", "4 streams", "1 concurrent x4"),
    "throughput": ("throughput, up to 64 in flight", "max <=64", "1 throughput x64"),
    "constant": ("constant at 100 req/s", "100/s", "1 constant 100/s"),
    "poisson": ("poisson at 100 req/s (mean)", "100/s", "1 poisson 100/s"),
    "ramp_up": ("ramp_up, linear from 1 to 20 req/s over 1 s", "1->20/s", "1 ramp_up 1->20/s"),
    "replay": ("replay", "replay", "1 replay"),
}


@pytest.mark.parametrize("kind", sorted(STEP_KINDS))
def test_a_step_reads_back_as_the_load_it_ran_and_says_its_words(kind: ProfileKind) -> None:
    load = example_step_load(kind)
    step = StepReport.of(0, load, StepAggregator().snapshot())
    stored = StepReport.model_validate_json(step.model_dump_json())
    assert stored.load == load
    words = (describe_load(stored), offered(stored), step_label(stored))
    assert words[1:] == (load_words(load).cell, f"1 {kind}{load_words(load).label}")
    assert words == _WORDS.get(kind, words)


def test_every_step_kind_has_its_words_pinned_until_it_is_new() -> None:
    assert set(_WORDS) <= STEP_KINDS <= set(typing.get_args(ProfileKind))


def test_a_bursty_step_reads_back_with_its_burstiness_and_says_it() -> None:
    load = example_step_load("poisson", burstiness=0.5)
    stored = StepReport.of(0, load, StepAggregator().snapshot())
    assert stored.load == load
    assert describe_load(stored) == "poisson at 100 req/s (mean), burstiness 0.5 (gamma gaps)"


def test_a_step_without_the_figure_that_names_its_load_is_worded_by_its_name() -> None:
    step = StepReport.of(0, "throughput", StepAggregator().snapshot())
    assert step.load is None
    assert (describe_load(step), offered(step), step_label(step)) == (
        "throughput",
        "throughput",
        "1 throughput",
    )


def test_a_sweep_step_named_only_by_its_rate_is_worded_by_the_rate() -> None:
    step = StepReport.of(2, "sweep", StepAggregator().snapshot(), requested_rate=16.6234)
    assert step.load is None
    assert (describe_load(step), offered(step), step_label(step)) == (
        "sweep at 16.62 req/s",
        "16.6/s",
        "3 sweep 16.6/s",
    )
