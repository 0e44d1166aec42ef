"""The statistics a bench report gives: Wilson's interval for a resolved rate, and the
exact McNemar test for two pipelines graded on the same tasks."""

from __future__ import annotations

import math

Z95 = 1.959963984540054  # the standard normal's 97.5th percentile


def wilson(resolved: int, tasks: int, z: float = Z95) -> tuple[float, float]:
    """Wilson's score interval (95% by default) for `resolved` of `tasks`, as fractions;
    (0, 1) when there are no tasks. Unlike the normal approximation it stays inside
    [0, 1] and is sensible at 0% and 100%, where small benches often are."""
    if tasks <= 0:
        return 0.0, 1.0
    p = resolved / tasks
    denominator = 1 + z * z / tasks
    centre = (p + z * z / (2 * tasks)) / denominator
    half = z * math.sqrt(p * (1 - p) / tasks + z * z / (4 * tasks * tasks)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """The two-sided exact McNemar p-value: how likely a split of the discordant tasks
    (solved by one pipeline alone) at least this uneven is when both are equally good,
    i.e. a binomial test of `only_a` in `only_a + only_b` at 1/2. 1.0 with none."""
    n = only_a + only_b
    if n == 0:
        return 1.0
    k = min(only_a, only_b)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / float(2**n)
    return min(1.0, 2.0 * tail)
