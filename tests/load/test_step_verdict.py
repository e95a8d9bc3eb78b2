"""A step's verdict by a one-sided Clopper-Pearson bound, checked against values worked by hand."""

from __future__ import annotations

import math

import pytest

from assay.load.step_verdict import (
    binomial_cdf,
    combined,
    judge,
    miss_lower_bound,
    miss_upper_bound,
)


def test_binomial_cdf_matches_the_sum_of_terms_by_hand() -> None:
    # P(X <= 2 | n=100, p=0.01) = .99^100 + 100 (.01) .99^99 + 4950 (.01)^2 .99^98
    by_hand = 0.99**100 + 100 * 0.01 * 0.99**99 + 4950 * 0.01**2 * 0.99**98
    assert binomial_cdf(2, 100, 0.01) == pytest.approx(by_hand, rel=1e-12)
    assert by_hand == pytest.approx(0.92063, abs=1e-5)


def test_no_miss_upper_bound_is_one_minus_alpha_to_the_one_over_n() -> None:
    assert miss_upper_bound(50, 0, 0.95) == pytest.approx(1 - 0.05 ** (1 / 50))
    assert miss_upper_bound(299, 0, 0.95) == pytest.approx(0.009970, abs=1e-6)


def test_one_miss_in_ten_bounds_solve_their_tail_equations() -> None:
    upper = miss_upper_bound(10, 1, 0.95)
    # P(X <= 1 | 10, U) = (1 - U)^10 + 10 U (1 - U)^9 = 0.05
    assert (1 - upper) ** 10 + 10 * upper * (1 - upper) ** 9 == pytest.approx(0.05, abs=1e-9)
    assert upper == pytest.approx(0.3942, abs=1e-4)
    # P(X >= 1 | 10, L) = 1 - (1 - L)^10 = 0.05
    assert miss_lower_bound(10, 1, 0.95) == pytest.approx(1 - 0.95 ** (1 / 10), abs=1e-9)


def test_all_missed_lower_bound_is_alpha_to_the_one_over_n() -> None:
    assert miss_lower_bound(20, 20, 0.9) == pytest.approx(0.1 ** (1 / 20))
    assert miss_upper_bound(20, 20, 0.9) == 1.0


def test_a_p99_slo_at_95_percent_needs_299_requests_without_a_miss_to_pass() -> None:
    assert math.ceil(math.log(0.05) / math.log(0.99)) == 299
    assert judge(299, 0, 0.01, 0.95).verdict == "pass"
    assert judge(298, 0, 0.01, 0.95).verdict == "undecided"


def test_three_misses_in_100_are_undecided_four_fail_a_p99_slo() -> None:
    # P(X >= 3 | 100, .01) = 1 - 0.92063 = 0.0794 > 0.05: cannot say it misses too often;
    # P(X >= 4 | 100, .01) = 1 - 0.92063 - 161700 (.01)^3 .99^97 = 0.0184 < 0.05: it does.
    assert judge(100, 3, 0.01, 0.95).verdict == "undecided"
    assert judge(100, 4, 0.01, 0.95).verdict == "fail"


def test_no_attempted_request_decides_nothing() -> None:
    assert judge(0, 0, 0.01, 0.95).verdict == "undecided"


def test_misses_beyond_attempts_are_refused() -> None:
    with pytest.raises(ValueError, match="misses"):
        miss_upper_bound(5, 6, 0.95)


def test_one_failing_slo_fails_the_step_and_one_undecided_leaves_it_undecided() -> None:
    assert combined(["pass", "fail", "undecided"]) == "fail"
    assert combined(["pass", "undecided"]) == "undecided"
    assert combined(["pass", "pass"]) == "pass"
