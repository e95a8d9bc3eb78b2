"""Server metrics: the exposition parsed by prometheus_client, each server kind's names, the
counter deltas and the cross-check verdicts."""

from __future__ import annotations

import pytest

from assay.server_metrics import (
    AssayCounts,
    Quantity,
    ServerCounts,
    ServerKind,
    TimedSample,
    counter_delta,
    cross_check,
    detect_kind,
    parse_exposition,
    quantities_of,
)
from assay.server_metrics.summary import series_of

VLLM = """
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 3.0
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="m"} 1.0
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.25
# TYPE vllm:request_success_total counter
vllm:request_success_total{engine="0",finished_reason="stop",model_name="m"} 10.0
vllm:request_success_total{engine="0",finished_reason="length",model_name="m"} 5.0
vllm:request_success_total{engine="0",finished_reason="abort",model_name="m"} 0.0
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{engine="0",model_name="m"} 1200.0
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine="0",model_name="m"} 480.0
"""
SGLANG = """
# TYPE sglang:prompt_tokens_total counter
sglang:prompt_tokens_total{model_name="m"} 8.128902e+06
# TYPE sglang:generation_tokens_total counter
sglang:generation_tokens_total{model_name="m"} 7.557572e+06
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="m"} 28.0
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{model_name="m"} 0.0
# TYPE sglang:token_usage gauge
sglang:token_usage{model_name="m"} 0.28
"""
TGI = """
# TYPE tgi_request_success counter
tgi_request_success 42
# TYPE tgi_queue_size gauge
tgi_queue_size 2
# TYPE tgi_batch_current_size gauge
tgi_batch_current_size 6
# TYPE tgi_request_generated_tokens histogram
tgi_request_generated_tokens_bucket{le="10"} 4
tgi_request_generated_tokens_bucket{le="+Inf"} 42
tgi_request_generated_tokens_sum 1900
tgi_request_generated_tokens_count 42
"""
LLAMACPP = """
# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total 6886
# TYPE llamacpp:tokens_predicted_total counter
llamacpp:tokens_predicted_total 3469
# TYPE llamacpp:requests_processing gauge
llamacpp:requests_processing 1
# TYPE llamacpp:requests_deferred gauge
llamacpp:requests_deferred 0
"""


def test_exposition_sums_label_sets_per_sample_name() -> None:
    samples = parse_exposition(VLLM)
    assert samples["vllm:request_success_total"] == 15.0
    assert samples["vllm:num_requests_running"] == 3.0


def test_text_that_is_not_prometheus_is_a_value_error() -> None:
    with pytest.raises(ValueError, match=r".+"):
        parse_exposition("<html>this is a login page</html>\n")


@pytest.mark.parametrize(
    ("text", "kind", "expected"),
    [
        (VLLM, ServerKind.vllm, {Quantity.requests_finished: 15.0, Quantity.generation_tokens:
                                 480.0, Quantity.kv_cache_usage: 0.25,
                                 Quantity.requests_waiting: 1.0}),
        (SGLANG, ServerKind.sglang, {Quantity.generation_tokens: 7.557572e6,
                                     Quantity.requests_running: 28.0,
                                     Quantity.kv_cache_usage: 0.28}),
        (TGI, ServerKind.tgi, {Quantity.requests_finished: 42.0,
                               Quantity.generation_tokens: 1900.0,
                               Quantity.requests_waiting: 2.0}),
        (LLAMACPP, ServerKind.llamacpp, {Quantity.prompt_tokens: 6886.0,
                                         Quantity.generation_tokens: 3469.0,
                                         Quantity.requests_running: 1.0}),
    ],
)  # fmt: skip
def test_each_server_kind_is_detected_and_read_by_its_own_names(
    text: str, kind: ServerKind, expected: dict[Quantity, float]
) -> None:
    samples = parse_exposition(text)
    assert detect_kind(samples) is kind
    values = quantities_of(kind, samples)
    for quantity, value in expected.items():
        assert values[quantity] == pytest.approx(value)


def test_a_counter_that_went_backwards_gives_no_delta() -> None:
    first = {"vllm:generation_tokens_total": 500.0, "vllm:request_success_total": 9.0}
    last = {"vllm:generation_tokens_total": 20.0, "vllm:request_success_total": 12.0}
    delta = counter_delta(ServerKind.vllm, first, last)
    assert delta.generation_tokens is None
    assert delta.requests_finished == 3.0
    assert delta.prompt_tokens is None


def test_cross_check_agrees_when_server_and_assay_count_the_same() -> None:
    checks = cross_check(
        ServerCounts(requests_finished=100, generation_tokens=1600),
        AssayCounts(answered=100, unfinished=0, output_tokens=1600, max_output_tokens=16),
    )
    assert [check.agrees for check in checks] == [True, True]


def test_cross_check_flags_a_server_that_finished_fewer_than_assay_received() -> None:
    checks = cross_check(
        ServerCounts(requests_finished=50, generation_tokens=800),
        AssayCounts(answered=100, unfinished=0, output_tokens=1600, max_output_tokens=16),
    )
    assert [check.agrees for check in checks] == [False, False]
    assert "misses requests" in checks[0].message


def test_cross_check_flags_more_finished_than_sent_as_other_traffic() -> None:
    (check,) = cross_check(
        ServerCounts(requests_finished=130),
        AssayCounts(answered=100, unfinished=20, output_tokens=0, max_output_tokens=0),
    )
    assert not check.agrees
    assert "other traffic" in check.message


def test_requests_assay_did_not_see_end_widen_the_allowed_range() -> None:
    (requests, tokens) = cross_check(
        ServerCounts(requests_finished=110, generation_tokens=1600 + 10 * 16),
        AssayCounts(answered=100, unfinished=10, output_tokens=1600, max_output_tokens=16),
    )
    assert requests.agrees
    assert tokens.agrees
    assert requests.allowed_high == 110


def test_series_turns_counters_into_rates_between_scrapes() -> None:
    s = 1_000_000_000
    samples = [
        TimedSample(0, {"vllm:generation_tokens_total": 0.0, "vllm:num_requests_running": 0.0}),
        TimedSample(2 * s, {"vllm:generation_tokens_total": 100.0,
                            "vllm:num_requests_running": 4.0}),
        TimedSample(3 * s, {"vllm:generation_tokens_total": 180.0,
                            "vllm:num_requests_running": 2.0}),
    ]  # fmt: skip
    series = series_of(ServerKind.vllm, samples, origin_ns=s)
    assert series.t_s == (-1.0, 1.0, 2.0)
    assert series.generation_tokens_per_s == (None, 50.0, 80.0)
    assert series.requests_running == (0.0, 4.0, 2.0)
    assert series.requests_finished_per_s == (None, None, None)
