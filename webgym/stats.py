"""Statistics every success rate is shown with: the 95% Wilson score interval, which stays inside [0, 1]
and keeps its width at small counts and rates near 0 or 1, where the normal interval collapses; and the
exact McNemar test, which says whether two policies run on the same tasks differ."""

from __future__ import annotations

import math

import numpy as np

Z95 = 1.959963984540054
"""The two-sided 95% quantile of the standard normal."""


def wilson_interval(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a success rate: `successes` of `n` episodes ((0, 1) when n is 0). It
    always holds the rate itself: at 0 or n successes rounding would otherwise put a bound a hair past it
    (a plot's error bar of -1e-17 is an error)."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    denominator = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return min(p, max(0.0, center - half)), max(p, min(1.0, center + half))


def rate_summary(successes: int, episodes: int) -> dict:
    """A success rate as the benchmarks print it: episodes, successes, the rate (None without episodes) and
    its 95% Wilson interval."""
    low, high = wilson_interval(successes, episodes)
    return {"episodes": int(episodes), "successes": int(successes),
            "success": successes / episodes if episodes else None, "ci95": [round(low, 4), round(high, 4)]}


def discordant(new: np.ndarray, old: np.ndarray) -> tuple[int, int]:
    """The discordant pairs of two policies' outcomes on the same tasks, in the same order (booleans):
    tasks only the new one solved (gained) and only the old one solved (lost), what mcnemar_exact takes."""
    new, old = np.asarray(new, dtype=bool), np.asarray(old, dtype=bool)
    return int((new & ~old).sum()), int((~new & old).sum())


def mcnemar_exact(gained: int, lost: int) -> float:
    """Two-sided exact McNemar p-value of a paired comparison: `gained` tasks only the new policy solved,
    `lost` only the old one did (tasks both or neither solved say nothing about the difference). Under no
    difference each discordant task is a fair coin, so p is twice the smaller binomial tail, at most 1."""
    n = gained + lost
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(gained, lost) + 1)) / 2**n
    return min(1.0, 2 * tail)


WILSON_SQL = f"""
CREATE OR REPLACE MACRO wilson_low(k, n) AS CASE WHEN n = 0 THEN 0.0 ELSE least(k / n, greatest(0.0,
    (k / n + {Z95}^2 / (2 * n) - {Z95} * sqrt((k / n) * (1 - k / n) / n + {Z95}^2 / (4 * n * n))) / (1 + {Z95}^2 / n)))
    END;
CREATE OR REPLACE MACRO wilson_high(k, n) AS CASE WHEN n = 0 THEN 1.0 ELSE greatest(k / n, least(1.0,
    (k / n + {Z95}^2 / (2 * n) + {Z95} * sqrt((k / n) * (1 - k / n) / n + {Z95}^2 / (4 * n * n))) / (1 + {Z95}^2 / n)))
    END"""
"""The same interval as DuckDB macros, for the warehouse's views (a test checks they agree)."""
