"""Change latency: from the start of a save to the moment a reader in the same process has the new generation.

Two ways to learn of a save: :func:`handoff_files.watchers.watcher.watch` (inotify events, a debounce, a
re-read and re-verification) and a reader that polls (what a LangGraph ``SqliteSaver`` user must
write: the saver has no change notification). Both are timed alike: each save starts after a
random pause, so a poller's phase is random as it would be in real use, and the next save waits
until the reader has the current one.
"""

from __future__ import annotations

import functools
import random
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from bench.bench_watch import _Arrivals
from handoff_files import HandoffStore, Restored
from handoff_files.watchers.watcher import watch

__all__ = ["poll_latencies", "watch_latencies"]


def _pause(rng: random.Random, longest: float) -> None:
    time.sleep(rng.uniform(0.0, longest))


def watch_latencies(
    thread: Path, content: Mapping[str, Any], count: int, *, debounce: float, pause: float, seed: int = 1
) -> list[float]:
    """Seconds from the start of each of *count* ``save()`` calls to the watcher's ``on_change`` for it.

    :param thread: a thread directory that does not exist yet (one generation is saved first).
    :param pause: the longest random pause before each save.
    """
    store = HandoffStore(thread)
    store.save(content)
    arrivals = _Arrivals()

    def on_change(restored: Restored) -> None:
        arrivals.arrived(restored.generation)

    rng = random.Random(seed)
    latencies = []
    with watch(thread, on_change=on_change, debounce=debounce):
        for _ in range(count):
            _pause(rng, pause)
            start = time.perf_counter()
            generation = store.save(content).generation
            latencies.append(arrivals.wait(generation) - start)
    return latencies


def poll_latencies(
    put: Callable[[], int],
    newest: Callable[[], int | None],
    count: int,
    *,
    interval: float,
    timeout: float = 10.0,
    seed: int = 1,
) -> list[float]:
    """Seconds from the start of each of *count* ``put()`` calls until a poller's ``newest()`` returns it.

    A thread calls *newest* every *interval* seconds, as a reader polling a database would.

    :param put: stores the next version and returns its number.
    :param newest: the newest version a reader can see now, or ``None``.
    :param interval: the poll interval; each put starts after a random pause of up to one interval.
    :raises RuntimeError: if a put is not seen within *timeout* seconds (the poller is broken or blind).
    """
    seen: dict[int, float] = {}
    changed = threading.Condition()
    stop = threading.Event()
    failure: list[BaseException] = []

    def poll() -> None:
        try:
            while not stop.is_set():
                version = newest()
                now = time.perf_counter()
                if version is not None:
                    with changed:
                        seen.setdefault(version, now)
                        changed.notify_all()
                stop.wait(interval)
        except BaseException as exc:  # handed to the main thread, which raises it
            failure.append(exc)
            with changed:
                changed.notify_all()

    def arrived(version: int) -> bool:
        return version in seen or bool(failure)

    poller = threading.Thread(target=poll, name="bench-poller", daemon=True)
    poller.start()
    rng = random.Random(seed)
    latencies = []
    try:
        for _ in range(count):
            _pause(rng, interval)
            start = time.perf_counter()
            version = put()
            with changed:
                if not changed.wait_for(functools.partial(arrived, version), timeout):
                    msg = f"version {version} was not seen by the poller within {timeout} s"
                    raise RuntimeError(msg)
            if failure:
                msg = f"the poller failed while waiting for version {version}"
                raise RuntimeError(msg) from failure[0]
            latencies.append(seen[version] - start)
    finally:
        stop.set()
        poller.join()
    return latencies
