"""A plain metrics page reads the same without `prometheus_client` as with it (issue 35: its
import was a tenth of a short run's start-up): `plain_samples` gives every sample the full
parser gives, in its order and under its names, or gives up and leaves the page to it."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from assay.server_metrics.plain_page import plain_samples
from assay.server_metrics.scrape import parse_exposition

NAMES = ["x", "x_total", "x_count", "x_sum", "x_bucket", "_total", "vllm:y", "DCGM_Z", "a1"]
# Each pool: what the pages of servers hold, then (drawn when `odd`) what the full parser must
# read, or refuse, alone.
KINDS = (["counter", "gauge", "summary", "histogram", "untyped"], ["unknown", "info", "bogus"])
VALUES = (["1", "0", "-2", "3.5", "1e3", ".5", "1.", "NaN", "+Inf", "-Inf"], ["nan", "1_0", "0x1"])
HELP_TEXTS = (["", "some help"], ['a "q" b', "a \\ b"])
LABEL_NAMES = (["a", "le", "model_name"], ["__name__", "__x", "9"])
LABEL_VALUES = (["", "0.1", "m x", "a,b", "}"], ['q"', "b\\n", "\u00e9"])
SPACES = ([" "], ["  ", "\t"])
STAMPS = (["", " 1700000000", " -5"], [" 1.5", " 1 2"])
OTHER_LINES = (["", "# a comment", "#"], ["# TYPE", "# HELP", "<html>", "  ", '# "HELP" x'])


def pool(draw: st.DrawFn, pools: tuple[list[str], list[str]], odd: bool) -> str:
    plain, strange = pools
    return draw(st.sampled_from(plain + strange if odd else plain))


@st.composite
def labels(draw: st.DrawFn, odd: bool) -> str:
    pairs = draw(st.lists(st.tuples(st.integers(), st.integers()), max_size=3))
    inside = (", " if odd and draw(st.booleans()) else ",").join(
        f'{pool(draw, LABEL_NAMES, odd)}="{pool(draw, LABEL_VALUES, odd)}"' for _ in pairs
    )
    return "{" + inside + draw(st.sampled_from(["", ","])) + "}"


@st.composite
def lines(draw: st.DrawFn, odd: bool) -> str:
    name = draw(st.sampled_from(NAMES))
    space = pool(draw, SPACES, odd)
    choice = draw(st.integers(0, 5))
    if choice == 0:
        head = "# TYPE " if not odd or draw(st.booleans()) else "#TYPE "
        return head + name + space + pool(draw, KINDS, odd)
    if choice == 1:
        return f"# HELP {name}{space}{pool(draw, HELP_TEXTS, odd)}"
    if choice == 2:
        return pool(draw, OTHER_LINES, odd)
    label_set = draw(st.one_of(st.just(""), labels(odd)))
    return f"{name}{label_set}{space}{pool(draw, VALUES, odd)}{pool(draw, STAMPS, odd)}"


@st.composite
def pages(draw: st.DrawFn) -> str:
    """A page of plain lines, or (one in four) of plain and odd ones."""
    odd = draw(st.integers(0, 3)) == 0
    end = draw(st.sampled_from(["\n", "\r\n"])) if odd else "\n"
    return end.join(draw(st.lists(lines(odd), max_size=10))) + end


def full_parse(text: str) -> list[tuple[str, float]] | None:
    """What prometheus_client reads: (name, value) in order, or None when it refuses."""
    try:
        return [
            (sample.name, float(sample.value))
            for family in text_string_to_metric_families(text)
            for sample in family.samples
        ]
    except ValueError:
        return None


def same(left: list[tuple[str, float]], right: list[tuple[str, float]]) -> bool:
    return len(left) == len(right) and all(
        a == c and (b == d or (math.isnan(b) and math.isnan(d)))
        for (a, b), (c, d) in zip(left, right, strict=True)
    )


@settings(max_examples=3000, deadline=None)
@given(pages())
def test_a_plain_read_is_the_full_parsers_read(text: str) -> None:
    plain = plain_samples(text)
    if plain is not None:
        full = full_parse(text)
        assert full is not None, text
        assert same(plain, full), (text, plain, full)


def test_pages_servers_write_are_read_plainly() -> None:
    vllm = (
        "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
        "# TYPE vllm:num_requests_running gauge\n"
        'vllm:num_requests_running{engine="0",model_name="m"} 0.0\n'
        "# HELP vllm:request_success_total Count of successfully processed requests.\n"
        "# TYPE vllm:request_success_total counter\n"
        'vllm:request_success_total{engine="0",finished_reason="stop",model_name="m"} 10.0\n'
        "# TYPE vllm:e2e_request_latency_seconds histogram\n"
        'vllm:e2e_request_latency_seconds_bucket{le="0.3",model_name="m"} 4.0\n'
        'vllm:e2e_request_latency_seconds_bucket{le="+Inf",model_name="m"} 10.0\n'
        'vllm:e2e_request_latency_seconds_count{model_name="m"} 10.0\n'
        'vllm:e2e_request_latency_seconds_sum{model_name="m"} 1.25\n'
    )
    dcgm = (
        "# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).\n"
        "# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n"
        'DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-1",modelName="NVIDIA A100-SXM4-80GB"} 80.5\n'
        "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n"
        'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0"} 123456789\n'
    )
    for page in (vllm, dcgm):
        plain = plain_samples(page)
        full = full_parse(page)
        assert plain is not None
        assert full is not None
        assert same(plain, full)
    assert parse_exposition(dcgm)["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION_total"] == 123456789


def test_a_page_outside_the_plain_part_goes_to_the_full_parser() -> None:
    assert plain_samples('x{a="1", b="2"} 1\n') is None
    assert parse_exposition('x{a="1", b="2"} 1\n') == {"x": 1.0}
