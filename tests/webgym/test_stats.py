"""The 95% Wilson interval every success rate is shown with, in Python and in the warehouse's SQL, and the exact
McNemar test of paired comparisons."""

from __future__ import annotations

import duckdb
import pytest

from webgym.stats import WILSON_SQL, discordant, mcnemar_exact, wilson_interval


@pytest.mark.parametrize(("successes", "n", "low", "high"), [
    (0, 10, 0.0, 0.2775),      # hand-computed: (z^2/2n -/+ z sqrt(z^2/4n^2)) / (1 + z^2/n)
    (5, 10, 0.2366, 0.7634),
    (10, 10, 0.7225, 1.0),
    (12, 60, 0.1183, 0.3178),
    (1, 120, 0.0015, 0.0457),
])
def test_the_wilson_interval_matches_hand_computed_values(successes, n, low, high):
    assert wilson_interval(successes, n) == pytest.approx((low, high), abs=5e-5)


def test_no_episodes_means_nothing_is_known():
    assert wilson_interval(0, 0) == (0.0, 1.0)


def test_the_sql_macros_agree_with_python():
    con = duckdb.connect()
    for statement in WILSON_SQL.split(";"):
        con.execute(statement)
    for successes, n in [(0, 1), (3, 7), (59, 60), (120, 180), (0, 0)]:
        low, high = con.execute(f"SELECT wilson_low({successes}, {n}), wilson_high({successes}, {n})").fetchall()[0]
        assert (low, high) == pytest.approx(wilson_interval(successes, n), abs=1e-12)


def test_the_interval_always_holds_the_rate_itself_in_python_and_sql():
    # 0 of 28 gave a lower bound of 1.2e-17 in SQL: the report's error bar went negative and the night failed
    con = duckdb.connect()
    for statement in WILSON_SQL.split(";"):
        con.execute(statement)
    counts = [(k, n) for n in range(1, 121) for k in range(n + 1)]
    assert all(low <= k / n <= high for k, n in counts for low, high in [wilson_interval(k, n)])
    outside = con.execute("""
        SELECT count(*) FROM (SELECT k, n FROM range(1, 121) AS a(n), LATERAL (SELECT range AS k FROM range(0, n + 1)))
        WHERE NOT (wilson_low(k, n) <= k / n AND k / n <= wilson_high(k, n))""").fetchone()[0]
    assert outside == 0


@pytest.mark.parametrize(("gained", "lost", "p"), [
    (8, 3, 0.2266),      # 2 * (1 + 11 + 55 + 165) / 2**11
    (3, 8, 0.2266),      # the same test either way round
    (13, 2, 0.007385),   # 2 * (1 + 15 + 105) / 2**15
    (30, 5, 2.2362e-5),  # 2 * (1 + 35 + 595 + 6545 + 52360 + 324632) / 2**35
    (10, 0, 0.001953),   # 2 / 2**10
])
def test_mcnemar_matches_hand_computed_binomial_tails(gained, lost, p):
    assert mcnemar_exact(gained, lost) == pytest.approx(p, rel=2e-3)


def test_mcnemar_without_a_difference_says_nothing():
    assert mcnemar_exact(0, 0) == 1.0 and mcnemar_exact(6, 6) == 1.0


def test_discordant_pairs_count_only_the_tasks_one_policy_solved():
    new = [True, True, False, False, True]
    old = [True, False, True, True, False]
    assert discordant(new, old) == (2, 2) and discordant(new, new) == (0, 0)
    assert discordant([True, False], [False, False]) == (1, 0)
