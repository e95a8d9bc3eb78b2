"""records.jsonl read back after a run, once: the peers' definitions and the page's samples.

Both read a few plain values of each completed record (its step, its timing's send, first
token, end and chunk times, its output tokens), so one pass feeds the two: each line is parsed
with orjson and read as plain dicts and lists, no model rebuilt. `read_back` is what a run,
`assay report` and the page call; `read_definitions` and `read_latency_samples` are each half.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.metrics.definitions import PeerDefinitions, PeerTally
from assay.records.jsonl import record_objects
from assay.reports.latency_samples import LatencySamples, Samples
from assay.reports.report import Report, StepReport


@dataclass(frozen=True, slots=True)
class ReadBack:
    """What one pass over records.jsonl found."""

    definitions: dict[int, PeerDefinitions] = field(default_factory=dict)
    """Per step index, the peers' figures (steps without a completed streamed answer left out)."""
    samples: Samples = field(default_factory=dict)
    """The page's latency samples, as `LatencySamples` keeps them."""


def read_back(
    records: Path, report: Report | None, *, samples: bool = True, seed: int = 0
) -> ReadBack:
    """The peers' figures of `report`'s steps (none without `report`) and, with `samples`, the
    page's latency samples (seeded by `seed`), from one pass over `records`.

    A record counts in the peers' figures when it is a completed streamed text answer whose
    targeted start falls inside its step's measured window (warm-up and cool-down left out, as
    the step's own figures leave them); every completed record counts in the samples. Nothing
    is found without the file. Raises `DataError` naming the line when a line is not a JSON
    object.
    """
    if not records.is_file():
        return ReadBack()
    windows = {} if report is None else {step.index: _window(step) for step in report.steps}
    kept = LatencySamples(seed) if samples else None
    tallies: dict[int, PeerTally] = {}
    for line in record_objects(records):
        completed = _completed(line)
        if completed is None:
            continue
        step, timing, send, end, tokens = completed
        if kept is not None:
            kept.add(step, send, timing.get("first_token_ns"), end, tokens)
        if tokens is None or step not in windows:
            continue
        chunks = _streamed_chunks(line, timing, windows[step])
        if chunks is None:
            continue
        tally = tallies.get(step)
        if tally is None:
            tally = tallies[step] = PeerTally()
        tally.add_answer(send, end, chunks[0], chunks[1], tokens)
    found = {step: tally.snapshot() for step, tally in tallies.items()}
    definitions = {step: peers for step, peers in found.items() if peers is not None}
    return ReadBack(definitions, {} if kept is None else kept.samples)


def read_latency_samples(records: Path, seed: int = 0) -> Samples:
    """Per metric and step, per-request latencies (ms) of the completed requests in `records`
    (see `assay.reports.latency_samples`). Raises `DataError` naming the line when a line is
    not a JSON object."""
    return read_back(records, None, seed=seed).samples


def _completed(
    line: dict[str, Any],
) -> tuple[int, dict[str, Any], int, int, int | None] | None:
    """(step, timing, send, end, output tokens) of a completed record with a send and an end.

    The output tokens are the server's count, else assay's streamed count (as every figure
    counts them), None when neither is given.
    """
    if line.get("status") != "completed":
        return None
    step, timing = line.get("step", 0), line.get("timing")
    if type(timing) is not dict or not isinstance(step, int):
        return None
    send, end = timing.get("send_ns"), timing.get("end_ns")
    if not (isinstance(send, int) and isinstance(end, int)):
        return None
    usage = line.get("usage")
    tokens = usage.get("completion_tokens") if type(usage) is dict else None
    if type(tokens) is not int:
        response = line.get("response")
        tokens = response.get("streamed_tokens") if type(response) is dict else None
        if type(tokens) is not int:
            tokens = None
    return step, timing, send, end, tokens


def _streamed_chunks(
    line: dict[str, Any], timing: dict[str, Any], window: tuple[int, int] | None
) -> tuple[list[int], list[int]] | None:
    """The chunk times and token counts of a streamed text answer whose targeted start falls
    inside `window` (its step's measured window, when the step has one)."""
    targeted, response = line.get("targeted_start_ns"), line.get("response")
    if not isinstance(targeted, int) or type(response) is not dict:
        return None
    if window is not None and not (window[0] <= targeted < window[1]):
        return None
    if response.get("streamed") is not True or response.get("embeddings") is not None:
        return None
    if response.get("scores") is not None:
        return None
    times, counts = timing.get("chunk_times_ns"), timing.get("chunk_tokens")
    if type(times) is not list or type(counts) is not list:
        return None
    if not (_ints(times) and _ints(counts)):
        return None
    return times, counts


def _window(step: StepReport) -> tuple[int, int] | None:
    metrics = step.metrics
    if metrics.excluded and metrics.start_ns is not None and metrics.end_ns is not None:
        return metrics.start_ns, metrics.end_ns
    return None


def _ints(values: list[object]) -> bool:
    """Whether every value is an int (a bool too, as `isinstance` says): their sum is an int
    exactly then, a float when one is, and a `TypeError` for anything else JSON holds.

    >>> _ints([1, 2]), _ints([]), _ints([1, 2.0]), _ints([1, None]), _ints([1, "2"])
    (True, True, False, False, False)
    """
    try:
        return type(sum(values)) is int  # type: ignore[arg-type]  # what else it holds, sum says
    except TypeError:
        return False
