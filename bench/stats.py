"""Summaries of lateness samples (seconds in, milliseconds out)."""

import math


def percentile(ordered: list[float], q: float) -> float:
    """Nearest-rank percentile of an ascending list: the smallest sample with at
    least q % of the samples at or below it (so p99.9 of 10,000 samples is the
    10th largest, a real observation, never an interpolation)."""
    if not ordered:
        return math.nan
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def lateness_ms(samples: list[float]) -> dict[str, float | int | None]:
    ordered = sorted(samples)
    if not ordered:
        return {"n": 0, "p50_ms": None, "p99_ms": None, "p999_ms": None, "max_ms": None, "min_ms": None}
    return {
        "n": len(ordered),
        "p50_ms": percentile(ordered, 50) * 1000,
        "p99_ms": percentile(ordered, 99) * 1000,
        "p999_ms": percentile(ordered, 99.9) * 1000,
        "max_ms": ordered[-1] * 1000,
        "min_ms": ordered[0] * 1000,
    }
