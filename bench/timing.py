"""Timing: interleaved medians for noisy shared machines."""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

__all__ = ["Sample", "calibrate", "interleaved", "paired_ratio"]


@dataclass(frozen=True, slots=True)
class Sample:
    """The per-operation times (seconds) of one measured case, one value per timed batch."""

    name: str
    seconds: tuple[float, ...]

    @property
    def median(self) -> float:
        """The median time per operation."""
        return statistics.median(self.seconds)

    def quantile(self, q: float) -> float:
        """The *q* quantile (0..1) of the time per operation, nearest rank."""
        ordered = sorted(self.seconds)
        return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def paired_ratio(candidate: Sample, baseline: Sample) -> float:
    """The median of the round-by-round ratios of two samples taken by the same :func:`interleaved` run.

    A second view of the ratio that a slow stretch of the machine, which hits both cases of a
    round alike, moves less than it moves the two medians.
    """
    return statistics.median(c / b for c, b in zip(candidate.seconds, baseline.seconds, strict=True))


def calibrate(operation: Callable[[], object], *, batch_seconds: float = 2e-3) -> int:
    """How many calls of *operation* make one timed batch of about *batch_seconds*.

    Tiny operations (a 2 KB hash) are timed in batches so the timer's resolution and the loop
    around them do not dominate; operations slower than the batch run once per batch.
    """
    operation()
    start = time.perf_counter()
    calls = 0
    while time.perf_counter() - start < batch_seconds / 4:
        operation()
        calls += 1
    per_call = (time.perf_counter() - start) / calls
    return max(1, round(batch_seconds / per_call))


def interleaved(
    cases: Mapping[str, Callable[[], object]],
    *,
    repeats: int,
    warmup: int = 2,
    batch: Mapping[str, int] | None = None,
    rotate: int = 0,
) -> dict[str, Sample]:
    """Time every case *repeats* times, interleaved, and return each one's samples.

    Each round runs every case once (a batch of ``batch[name]`` calls, default 1), in an order
    rotated from round to round, so a burst of load on a shared machine hits all cases alike
    rather than the one that happened to run then. ``gc.collect()`` runs before every timed
    batch, so no case pays for garbage another one left. *rotate* starts the rotation further
    on, for a caller that runs one round at a time.
    """
    names = list(cases)
    sizes = {name: (batch or {}).get(name, 1) for name in names}
    for _ in range(warmup):
        for name in names:
            for _ in range(sizes[name]):
                cases[name]()
    times: dict[str, list[float]] = {name: [] for name in names}
    for round_ in range(rotate, rotate + repeats):
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            operation, size = cases[name], sizes[name]
            gc.collect()
            start = time.perf_counter_ns()
            for _ in range(size):
                operation()
            elapsed = time.perf_counter_ns() - start
            times[name].append(elapsed / size / 1e9)
    return {name: Sample(name, tuple(values)) for name, values in times.items()}
