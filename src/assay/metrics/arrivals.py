"""When one answer's output tokens arrived: the seconds they fell in, the gaps between reads
that carried several, and the second token (see `assay.metrics.aggregator` for the definitions).
"""

from __future__ import annotations

import itertools
from bisect import bisect_left

from assay.core.response import ResponseTiming
from assay.metrics.sketch import QuantileSketch
from assay.spec.constraints import NS_PER_S


def add_arrivals(
    buckets: dict[int, int],
    origin: int,
    timing: ResponseTiming,
    output_tokens: int,
    one_per_chunk: bool,
) -> None:
    """Count a completed answer's output tokens into `buckets`, the one-second buckets after
    `origin` they arrived in."""
    times = timing.chunk_times_ns
    count = len(times)
    counts = timing.chunk_tokens
    cumulative: list[int] | None = None  # tokens up to each chunk; None: one per chunk
    if one_per_chunk:
        total = count
    else:
        have = len(counts)
        cumulative = list(
            itertools.accumulate(max(0, counts[i]) if i < have else 1 for i in range(count))
        )
        total = cumulative[-1] if cumulative else 0
    if total <= 0:
        # Nothing was seen arriving token by token: every token came with the end.
        second = (timing.end_ns - origin) // NS_PER_S
        buckets[second] = buckets.get(second, 0) + output_tokens
        return
    first_second = (times[0] - origin) // NS_PER_S
    last_second = (times[-1] - origin) // NS_PER_S
    if first_second == last_second:
        # Every chunk in one second (most answers): the loop below would put all
        # `output_tokens` there, whichever way the chunks carried them.
        if output_tokens > 0:
            buckets[first_second] = buckets.get(first_second, 0) + output_tokens
        return
    counted = 0  # output tokens put in buckets so far
    begin = 0  # the first chunk not yet counted
    for second in range(first_second, last_second + 1):
        end = bisect_left(times, origin + (second + 1) * NS_PER_S, begin)
        if end == begin:
            continue
        seen = end if cumulative is None else cumulative[end - 1]
        # The server's count spread over the chunks in proportion to what they carried.
        upto = seen if total == output_tokens else (output_tokens * seen + total // 2) // total
        if upto > counted:
            buckets[second] = buckets.get(second, 0) + upto - counted
            counted = upto
        begin = end


def add_spread_gaps(
    itl: QuantileSketch, times: tuple[int, ...], counts: tuple[int, ...]
) -> tuple[float, int]:
    """Add the ITL samples of reads carrying several tokens to `itl`; return the worst gap and
    how many tokens were coalesced.

    Chunks that share an arrival time came in one network read: they form one arrival whose
    gap is spread over all their tokens, and their tokens after the read's first chunk are
    counted as coalesced gaps.
    """
    have = len(counts)
    # (arrival time, tokens) per read; the first chunk opens the first read whatever it holds.
    read_times = [times[0]]
    read_tokens = [counts[0] if have else 1]
    coalesced = 0
    for i in range(1, len(times)):
        tokens = counts[i] if i < have else 1
        if tokens <= 0:
            # A chunk without tokens: its gap carries over to the next token.
            continue
        at = times[i]
        if at == read_times[-1]:
            read_tokens[-1] += tokens
            coalesced += tokens
        else:
            read_times.append(at)
            read_tokens.append(tokens)
    worst_gap = 0.0
    for k in range(1, len(read_times)):
        tokens = read_tokens[k]
        gap = (read_times[k] - read_times[k - 1]) / tokens
        itl.add(gap, tokens)
        worst_gap = max(worst_gap, gap)
    return worst_gap, coalesced


def second_token_ns(timing: ResponseTiming) -> int | None:
    """When the answer's second output token arrived, by the per-chunk token counts."""
    counts = timing.chunk_tokens
    have = len(counts)
    seen = 0
    for i, at in enumerate(timing.chunk_times_ns):
        seen += max(0, counts[i]) if i < have else 1
        if seen >= 2:
            return at
    return None
