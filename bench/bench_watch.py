"""The watcher benchmark: how long from a new primary's rename to the callback that hands it over.

``python -m bench.bench_watch`` measures, over ``--count`` saves each (200 by default):

- watchdog alone: ``os.replace`` of a new primary → a bare watchdog handler sees the move (the floor);
- :func:`handoff_files.watchers.watcher.watch` with ``debounce=0``: ``os.replace`` → ``on_change`` (the floor
  plus the re-read and verification of the primary);
- ``watch()`` with the default debounce (50 ms): ``os.replace`` → ``on_change``, what an agent sees;
- end to end: the start of a :meth:`HandoffStore.save` call → ``on_change``, default debounce.

The generations are real saves: :meth:`HandoffStore.save` seals them in a copy of the thread
beforehand, so each timed ``os.replace`` puts the next sealed generation of the watched thread in
place, as a save's own rename does. One save at a time: the next starts once the callback ran.

It writes its table to ``bench/results-watch.md`` (``--out`` to change).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final

from watchdog.events import FileMovedEvent, FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from bench.report import machine_facts, markdown_table, ms, run_kind, text_table, write_report
from bench.timing import Sample
from handoff_files import HandoffStore, Restored
from handoff_files.watchers.watcher import DEFAULT_DEBOUNCE, watch

__all__ = ["main"]

DEFAULT_OUT: Final = Path(__file__).resolve().parent / "results-watch.md"
FULL_COUNT: Final = 200
QUICK_COUNT: Final = 20
#: How long one save may take to reach its callback before the run is declared broken.
TIMEOUT: Final = 10.0
THREAD: Final = "bench-thread"

_METHOD: Final = """\
- Each case watches a fresh copy of a thread holding generation 1. Its next generations were sealed
  beforehand by `HandoffStore.save` in another copy of the thread, so they chain correctly.
- One timed save: write the next generation's bytes to a temp file beside the primary, take the
  time, `os.replace` it over the primary, and wait for the callback, which takes the time on entry
  (one process, one monotonic clock). The next save starts only once the callback ran, so no two
  saves share a debounce window.
- The end-to-end row times from the start of `HandoffStore.save()` (its fsyncs, history copy,
  state.json and journal included) to `on_change`.
- The default debounce waits for 50 ms of quiet after the last event on the primary: it turns
  a save's burst of events, or a writer saving in a loop, into one re-read. It is most of what an
  agent waits; `debounce=0` shows what the re-read and verification cost on their own."""


def _layers(narrative: str) -> dict[str, Any]:
    return {"state": {}, "narrative": narrative, "decisions": [], "priorities": [], "warnings": []}


def _prepare(root: Path, count: int) -> tuple[Path, list[bytes]]:
    """A thread holding generation 1, and the bytes of its generations 2 … count+1, sealed by save()."""
    template = root / "template" / THREAD
    HandoffStore(template).save(_layers("Generation 1."))
    ahead = root / "ahead" / THREAD
    shutil.copytree(template, ahead)
    store = HandoffStore(ahead)
    generations = []
    for generation in range(2, count + 2):
        store.save(_layers(f"Generation {generation}."))
        generations.append(store.primary.read_bytes())
    return template, generations


class _Arrivals:
    """When each generation reached a callback (perf_counter seconds), waited for one at a time."""

    def __init__(self) -> None:
        self._times: dict[int, float] = {}
        self._cond = threading.Condition()

    def arrived(self, generation: int) -> None:
        now = time.perf_counter()
        with self._cond:
            self._times.setdefault(generation, now)
            self._cond.notify_all()

    def wait(self, generation: int) -> float:
        with self._cond:
            if not self._cond.wait_for(lambda: generation in self._times, TIMEOUT):
                msg = f"generation {generation} did not reach the callback within {TIMEOUT} s"
                raise RuntimeError(msg)
            return self._times[generation]


def _replace_each(thread: Path, generations: list[bytes], arrivals: _Arrivals) -> list[float]:
    """Rename each generation over the primary in turn; the latency from each rename to its callback."""
    primary = thread / "handoff.json"
    temp = thread / ".handoff.json.benchtmp.tmp"
    latencies = []
    for generation, data in enumerate(generations, start=2):
        temp.write_bytes(data)
        start = time.perf_counter()
        os.replace(temp, primary)
        latencies.append(arrivals.wait(generation) - start)
    return latencies


class _Moves(FileSystemEventHandler):
    """A bare watchdog handler: notes when a move onto the primary arrives."""

    def __init__(self, arrivals: _Arrivals, generation: Callable[[], int]) -> None:
        self._arrivals = arrivals
        self._generation = generation

    def on_moved(self, event: FileSystemEvent) -> None:
        if os.fsdecode(event.dest_path).endswith("handoff.json"):
            self._arrivals.arrived(self._generation())


def _watchdog_alone(thread: Path, generations: list[bytes]) -> list[float]:
    arrivals = _Arrivals()
    expected = iter(range(2, len(generations) + 2))  # the handler cannot read the file: count the moves
    observer = Observer()
    observer.schedule(_Moves(arrivals, lambda: next(expected)), os.fspath(thread), event_filter=[FileMovedEvent])
    observer.start()
    try:
        return _replace_each(thread, generations, arrivals)
    finally:
        observer.stop()
        observer.join()


def _watcher(thread: Path, generations: list[bytes], debounce: float) -> list[float]:
    arrivals = _Arrivals()

    def on_change(restored: Restored) -> None:
        arrivals.arrived(restored.generation)

    with watch(thread, on_change=on_change, debounce=debounce):
        return _replace_each(thread, generations, arrivals)


def _end_to_end(thread: Path, count: int) -> list[float]:
    arrivals = _Arrivals()

    def on_change(restored: Restored) -> None:
        arrivals.arrived(restored.generation)

    store = HandoffStore(thread)
    latencies = []
    with watch(thread, on_change=on_change):
        for generation in range(2, count + 2):
            start = time.perf_counter()
            store.save(_layers(f"Generation {generation}."))
            latencies.append(arrivals.wait(generation) - start)
    return latencies


def _rows(count: int) -> list[list[str]]:
    with tempfile.TemporaryDirectory(prefix="bench-watch-") as scratch:
        root = Path(scratch)
        template, generations = _prepare(root, count)
        cases: dict[str, Callable[[Path], list[float]]] = {
            "watchdog alone: os.replace → handler": lambda t: _watchdog_alone(t, generations),
            "watch(debounce=0): os.replace → on_change": lambda t: _watcher(t, generations, 0.0),
            f"watch() default debounce ({DEFAULT_DEBOUNCE * 1e3:g} ms): os.replace → on_change": (
                lambda t: _watcher(t, generations, DEFAULT_DEBOUNCE)
            ),
            "watch() default debounce: save() call → on_change": lambda t: _end_to_end(t, count),
        }
        rows = []
        for number, (name, case) in enumerate(cases.items()):
            thread = root / f"case-{number}" / THREAD
            shutil.copytree(template, thread)
            print(f"{name} ({count} saves)...", flush=True)
            sample = Sample(name, tuple(case(thread)))
            rows.append([name, str(count), ms(sample.median), ms(sample.quantile(0.9)), ms(max(sample.seconds))])
        return rows


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench.bench_watch",
        description="Time a new primary's way from its rename to the watcher's callback.",
    )
    parser.add_argument("--count", type=int, default=None, help=f"saves per case (default {FULL_COUNT})")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_COUNT} saves per case: a smoke run")
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help=f"Markdown report to write (default: {DEFAULT_OUT.relative_to(DEFAULT_OUT.parents[1])})",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark, print its table and write its report.

    :returns: 0.
    """
    args = _parser().parse_args(argv)
    count = args.count or (QUICK_COUNT if args.quick else FULL_COUNT)
    headers = ["path", "saves", "median ms", "p90 ms", "max ms"]
    rows = _rows(count)
    print()
    print(text_table(headers, rows))
    scratch = Path(tempfile.gettempdir())
    write_report(
        args.out,
        "handoff-files: watcher latency",
        [*machine_facts(scratch), run_kind(quick=args.quick or count < FULL_COUNT)],
        ["## From a new primary to the callback\n\n" + markdown_table(headers, rows), "## Method\n\n" + _METHOD],
    )
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
